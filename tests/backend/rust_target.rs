// A Rust program for `zxsampler record`'s name tests (test_record_rust.sh): a generic trait
// impl, a closure, helpers inlined into their callers, and std's own generic code (HashMap).
use std::collections::HashMap;

pub trait Kernel {
    fn run(&mut self, rounds: u64) -> u64;
}

pub struct Xorshift {
    state: u64,
}

// Inlined into `<Xorshift as Kernel>::run`: its file:line must still be its own frame.
#[inline(always)]
fn mix_step(x: u64) -> u64 {
    let mut x = x;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

impl Kernel for Xorshift {
    #[inline(never)]
    fn run(&mut self, rounds: u64) -> u64 {
        let mut acc = 0u64;
        for _ in 0..rounds {
            self.state = mix_step(self.state);
            acc = acc.wrapping_add(self.state);
        }
        acc
    }
}

pub struct Table<K> {
    map: HashMap<K, u64>,
}

impl<K: std::hash::Hash + Eq + Copy> Table<K> {
    #[inline(never)]
    fn count_all(&mut self, keys: &[K]) -> u64 {
        for k in keys {
            *self.map.entry(*k).or_insert(0) += 1;
        }
        self.map.len() as u64
    }
}

#[inline(never)]
fn apply<F: Fn(u64) -> u64>(f: F, rounds: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..rounds {
        acc = acc.wrapping_add(f(i));
    }
    acc
}

#[inline(never)]
fn run_kernel(k: &mut dyn Kernel, rounds: u64) -> u64 {
    k.run(rounds)
}

fn main() {
    let seconds: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let start = std::time::Instant::now();
    let mut xs = Xorshift { state: 88172645463325252 };
    let mut table = Table { map: HashMap::new() };
    let keys: Vec<u32> = (0..4096u32).map(|i| i.wrapping_mul(2654435761) % 1000).collect();
    let scale = 3u64;
    let mut total = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        total = total.wrapping_add(run_kernel(&mut xs, 200_000));
        total = total.wrapping_add(table.count_all(&keys));
        total = total.wrapping_add(apply(|i| mix_step(i * scale) % 7, 200_000));
    }
    println!("{}", total % 10);
}
