//! The tile interpreter: runs a specialized tile kernel on whole tiles, one tile block at a
//! time (blocks in parallel), with the tile IR's semantics and nothing else. It is the
//! executable definition of the tile IR: the lowering is tested against it. It never
//! depends on the lowering.

#![warn(missing_docs)]
