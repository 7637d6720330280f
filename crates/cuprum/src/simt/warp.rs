//! Warp-level operations: shuffles, votes and reductions across the 32 lanes of a warp.
//!
//! They act on the lanes that execute them together; a shuffle that reads a lane which is not
//! taking part is an error the emulator reports. Lane operands count modulo 32, as in PTX.

use super::shared::unreachable_on_host;

/// `value` from lane `lane` of the warp.
pub fn shuffle<T: Copy>(value: T, lane: u32) -> T {
    let _ = (value, lane);
    unreachable_on_host()
}

/// `value` from the lane `delta` below (a lane with none below keeps its own).
pub fn shuffle_up<T: Copy>(value: T, delta: u32) -> T {
    let _ = (value, delta);
    unreachable_on_host()
}

/// `value` from the lane `delta` above (a lane with none above keeps its own).
pub fn shuffle_down<T: Copy>(value: T, delta: u32) -> T {
    let _ = (value, delta);
    unreachable_on_host()
}

/// `value` from lane `lane_id ^ mask`.
pub fn shuffle_xor<T: Copy>(value: T, mask: u32) -> T {
    let _ = (value, mask);
    unreachable_on_host()
}

/// Whether `predicate` holds on every taking-part lane.
pub fn all(predicate: bool) -> bool {
    let _ = predicate;
    unreachable_on_host()
}

/// Whether `predicate` holds on any taking-part lane.
pub fn any(predicate: bool) -> bool {
    let _ = predicate;
    unreachable_on_host()
}

/// Bit `l` set where `predicate` holds on lane `l`.
pub fn ballot(predicate: bool) -> u32 {
    let _ = predicate;
    unreachable_on_host()
}

/// The sum of `value` over the whole warp (all 32 lanes must take part), on every lane.
pub fn reduce_add<T: Copy>(value: T) -> T {
    let _ = value;
    unreachable_on_host()
}

/// The minimum over the whole warp, on every lane.
pub fn reduce_min<T: Copy>(value: T) -> T {
    let _ = value;
    unreachable_on_host()
}

/// The maximum over the whole warp, on every lane.
pub fn reduce_max<T: Copy>(value: T) -> T {
    let _ = value;
    unreachable_on_host()
}
