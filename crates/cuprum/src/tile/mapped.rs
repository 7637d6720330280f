//! Mapped partitions (cuTile Rust's `partition(..).map(map_shape, num_tile_blocks)`): an
//! output cut into tiles that a persistent kernel (`MappedPartitionMut` and its
//! `iter_indices()` loop) visits with a grid of `num_tile_blocks` blocks, block `b` taking
//! tiles `b, b + n, ..` of the schedule `cuprum_tile_ir::grid::mapped_tile` defines (bands
//! of `map_shape[rank - 2]` rows of tiles). The launch checks the map and the block count
//! against the tiles before anything runs.

use crate::tile::launch::bind::ArgDesc;
use crate::tile::launch::{KernelMapped, LaunchArgument, tensor_desc};
use crate::tile::op::{IntoDeviceOp, Value, value};
use crate::tile::sealed::Sealed;
use crate::tile::tensor::{Partition, PartitionTarget};

/// A partition whose tiles a persistent kernel's blocks visit by a schedule (see the module
/// docs); what a `MappedPartitionMut<E, S, M>` parameter takes.
#[derive(Debug)]
pub struct MappedPartition<T> {
    partition: Partition<T>,
    map: Vec<usize>,
    blocks: u32,
}

impl<T> Partition<T> {
    /// This partition's tiles dealt to `num_tile_blocks` blocks by the schedule of map shape
    /// `map_shape` (one entry per axis; all but the second-to-last 1): the launch's grid is
    /// `(num_tile_blocks, 1, 1)`.
    pub fn map<const R: usize>(
        self,
        map_shape: [usize; R],
        num_tile_blocks: u32,
    ) -> MappedPartition<T> {
        MappedPartition {
            partition: self,
            map: map_shape.to_vec(),
            blocks: num_tile_blocks,
        }
    }
}

impl<T> MappedPartition<T> {
    /// The tensor, no longer partitioned.
    pub fn unpartition(self) -> T {
        self.partition.unpartition()
    }

    /// The partition, no longer mapped.
    pub fn unmap(self) -> Partition<T> {
        self.partition
    }

    /// The map shape.
    pub fn map_shape(&self) -> &[usize] {
        &self.map
    }

    /// The number of tile blocks a launch runs.
    pub fn num_tile_blocks(&self) -> u32 {
        self.blocks
    }
}

impl<P: PartitionTarget> Sealed for MappedPartition<P> {}

impl<P: PartitionTarget> LaunchArgument for MappedPartition<P> {
    #[allow(private_interfaces)]
    fn describe(&self) -> ArgDesc<'_> {
        ArgDesc::Mapped {
            tensor: tensor_desc(self.partition.tensor().view()),
            tile: self.partition.partition_shape(),
            map: &self.map,
            blocks: self.blocks,
        }
    }
}

impl<P: PartitionTarget> KernelMapped<P::Elem> for MappedPartition<P> {}

impl<P: PartitionTarget> IntoDeviceOp<MappedPartition<P>> for MappedPartition<P> {
    type Op = Value<MappedPartition<P>>;
    fn into_op(self) -> Value<MappedPartition<P>> {
        value(self)
    }
}
