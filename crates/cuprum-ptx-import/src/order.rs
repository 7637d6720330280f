//! The order in which the imported kernel's loop over basic blocks gives them their turn
//! (see the crate docs: each pass runs the first block, in this order, that a lane of the
//! warp is at). Lanes meet again where their paths join only if no lane can still reach a
//! block from one ordered before it. So the order is a topological order of the
//! control-flow graph without its back edges in which every block of a loop comes before
//! the blocks the loop exits to, and each loop gets a *latch*: a step of its own, after
//! every block of the loop and before its exits, that the loop's back edges go to and that
//! sends its lanes on to the header. Lanes that go round again (a `continue`, the end of
//! the body) wait there for the rest of the warp's lanes in the loop, and lanes that leave
//! wait at the exit: where a GPU reconverges them.

use std::collections::{BTreeMap, BTreeSet};

/// The turns of a kernel's blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Order {
    /// Each block's turn (0 first).
    pub(crate) rank: Vec<u32>,
    /// Per loop header (a block), its latch's turn.
    pub(crate) latch: BTreeMap<usize, u32>,
    /// The back edges `(from, header)`: a branch along one goes to the header's latch.
    pub(crate) back: BTreeSet<(usize, usize)>,
    /// How many turns there are (blocks and latches).
    pub(crate) count: u32,
}

impl Order {
    /// The turn a branch from block `from` to block `to` sets.
    pub(crate) fn target(&self, from: usize, to: usize) -> u32 {
        if self.back.contains(&(from, to))
            && let Some(&l) = self.latch.get(&to)
        {
            return l;
        }
        self.rank[to]
    }

    /// The text's order, without latches (what an irreducible graph keeps).
    fn text(n: usize) -> Order {
        Order {
            rank: (0..n as u32).collect(),
            latch: BTreeMap::new(),
            back: BTreeSet::new(),
            count: n as u32,
        }
    }
}

/// The order of blocks with successors `succ` (block 0 is the entry). Ties keep the text's
/// order (blocks the entry does not reach rank anywhere: no lane is ever at them).
pub(crate) fn order(succ: &[Vec<usize>]) -> Order {
    let n = succ.len();
    if n == 0 {
        return Order::text(0);
    }
    // Back edges: to a block still on the depth-first search's stack.
    let mut back = BTreeSet::new();
    let (mut state, mut stack) = (vec![0u8; n], vec![(0usize, 0usize)]);
    state[0] = 1;
    while let Some(&mut (b, ref mut next)) = stack.last_mut() {
        if let Some(&s) = succ[b].get(*next) {
            *next += 1;
            match state[s] {
                0 => {
                    state[s] = 1;
                    stack.push((s, 0));
                }
                1 => {
                    back.insert((b, s));
                }
                _ => {}
            }
        } else {
            state[b] = 2;
            stack.pop();
        }
    }
    let mut preds = vec![Vec::new(); n];
    for (b, ss) in succ.iter().enumerate() {
        for &s in ss {
            preds[s].push(b);
        }
    }
    // Each header's loop: the header and what reaches one of its back edges' sources
    // without passing it.
    let mut loops: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for &(source, header) in &back {
        let body = loops
            .entry(header)
            .or_insert_with(|| BTreeSet::from([header]));
        let mut work = vec![source];
        body.insert(source);
        while let Some(b) = work.pop() {
            if b == header {
                continue;
            }
            for &p in &preds[b] {
                if body.insert(p) {
                    work.push(p);
                }
            }
        }
    }
    // Nodes: the blocks, then one latch per header.
    let latch_node: BTreeMap<usize, usize> =
        loops.keys().enumerate().map(|(k, &h)| (h, n + k)).collect();
    let nodes = n + latch_node.len();
    let mut edges: BTreeSet<(usize, usize)> = BTreeSet::new();
    for (b, ss) in succ.iter().enumerate() {
        for &s in ss {
            if !back.contains(&(b, s)) {
                edges.insert((b, s));
            }
        }
    }
    for (&header, body) in &loops {
        // The loop's own latch and those of the loops inside it belong to it too.
        let mut members: Vec<usize> = body.iter().copied().collect();
        for (&inner, &l) in &latch_node {
            if inner != header && body.contains(&inner) {
                members.push(l);
            }
        }
        let exits: BTreeSet<usize> = body
            .iter()
            .flat_map(|&b| succ[b].iter().copied())
            .filter(|s| !body.contains(s))
            .collect();
        let latch = latch_node[&header];
        for &m in &members {
            edges.insert((m, latch));
            for &e in &exits {
                edges.insert((m, e));
            }
        }
        for &e in &exits {
            edges.insert((latch, e));
        }
    }
    // Kahn's algorithm, the smallest ready node first.
    let mut indegree = vec![0usize; nodes];
    let mut out = vec![Vec::new(); nodes];
    for &(a, b) in &edges {
        if a != b {
            indegree[b] += 1;
            out[a].push(b);
        }
    }
    let mut ready: BTreeSet<usize> = (0..nodes).filter(|&b| indegree[b] == 0).collect();
    let mut rank = vec![u32::MAX; nodes];
    let mut next = 0u32;
    while let Some(b) = ready.pop_first() {
        rank[b] = next;
        next += 1;
        for &s in &out[b] {
            indegree[s] -= 1;
            if indegree[s] == 0 {
                ready.insert(s);
            }
        }
    }
    if rank.contains(&u32::MAX) || rank[0] != 0 {
        return Order::text(n);
    }
    Order {
        latch: latch_node.iter().map(|(&h, &l)| (h, rank[l])).collect(),
        rank: rank[..n].to_vec(),
        back,
        count: nodes as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::order;

    #[test]
    fn a_loop_and_its_latch_come_before_the_block_it_exits_to() {
        // 0: entry -> 1 (skip the loop: to 4) or 2; 2: loop header -> 3 or exit 4;
        // 3: latch source -> 2; the text puts the skip path's block before the loop.
        let o = order(&[vec![1, 2], vec![4], vec![3, 4], vec![2], vec![]]);
        let (r, l) = (&o.rank, o.latch[&2]);
        assert!(r[2] < r[3] && r[3] < l && l < r[4], "{o:?}");
        assert_eq!((r[0], o.target(3, 2), o.target(0, 2)), (0, l, r[2]));
        // A `continue` from the middle of the body (1 -> 0 as well as 2 -> 0): both wait at
        // the latch, which comes after the whole body.
        let o = order(&[vec![1], vec![0, 2], vec![0, 3], vec![]]);
        assert!(o.rank[2] < o.latch[&0] && o.latch[&0] < o.rank[3], "{o:?}");
        assert_eq!(o.target(1, 0), o.latch[&0]);
        // Nested loops: the inner latch before the outer one.
        let o = order(&[vec![1], vec![2], vec![1, 3], vec![0, 4], vec![]]);
        assert!(
            o.latch[&1] < o.latch[&0] && o.latch[&0] < o.rank[4],
            "{o:?}"
        );
        // A straight line keeps its order.
        assert_eq!(order(&[vec![1], vec![2], vec![]]).rank, vec![0, 1, 2]);
    }
}
