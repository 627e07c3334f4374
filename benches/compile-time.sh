#!/usr/bin/env bash
# Compile time of #[derive(Tool)]: a generated crate of 200 derived tools
# against the same 200 tools with hand-written impls. Each crate is built once
# to warm the shared dependencies, then rebuilt RUNS times from a touched
# source (CARGO_INCREMENTAL=0, so the whole crate is compiled again); the
# median wall time of each is printed with their ratio.
#
# Usage: benches/compile-time.sh [RUNS]   (default 5)
set -euo pipefail
runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$root/target/compile-time
mkdir -p "$work"
export CARGO_TARGET_DIR=$work/target CARGO_INCREMENTAL=0

effect() { case $(( $1 % 3 )) in 0) echo read_only ;; 1) echo idempotent_write ;; *) echo non_idempotent_write ;; esac; }
marker() { case $(( $1 % 3 )) in 0) echo ReadOnly ;; 1) echo IdempotentWrite ;; *) echo NonIdempotentWrite ;; esac; }

generate() { # $1 = derive | hand
  local dir=$work/$1
  mkdir -p "$dir/src"
  cat > "$dir/Cargo.toml" <<TOML
[package]
name = "tools-$1"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
toolgate = { path = "$root/core" }
serde = { version = "1", features = ["derive"] }
schemars = "1"

[workspace]
TOML
  {
    echo '#![allow(dead_code)]'
    if [ "$1" = derive ]; then
      echo 'use toolgate::Tool;'
    else
      echo 'use toolgate::{gate, Local, Tool, ReadOnly, IdempotentWrite, NonIdempotentWrite};'
    fi
    echo '#[derive(serde::Deserialize, schemars::JsonSchema)] pub struct Answer { pub text: String }'
    for i in $(seq 0 199); do
      local e; e=$(effect "$i")
      local input=""; if [ $(( i % 10 )) -eq 0 ] && [ "$e" = read_only ]; then input=", input = Answer"; fi
      if [ "$1" = derive ]; then
        echo "/// Tool number $i."
        echo "#[derive(Tool)]"
        echo "#[tool(effect = $e$input)]"
        echo "pub struct Tool$i;"
      else
        local gate
        if [ -n "$input" ]; then gate=WaitsForInput; elif [ "$e" = read_only ]; then gate=Runs; else gate=ApprovalByEffect; fi
        echo "pub struct Tool$i;"
        echo "impl Tool for Tool$i {"
        echo "    type Origin = Local;"
        echo "    type Effect = $(marker "$i");"
        echo "    type Gate = gate::$gate;"
        echo "    fn name(&self) -> &str { \"tool$i\" }"
        echo "    fn description(&self) -> &str { \"Tool number $i.\" }"
        echo "}"
        if [ -n "$input" ]; then echo "impl toolgate::RequiresInput for Tool$i { type Input = Answer; }"; fi
      fi
    done
  } > "$dir/src/lib.rs"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

time_builds() { # $1 = derive | hand
  local dir=$work/$1
  (cd "$dir" && cargo build -q)  # warm: dependencies and toolgate itself
  for _ in $(seq 1 "$runs"); do
    touch "$dir/src/lib.rs"
    local start end
    start=$(date +%s.%N)
    (cd "$dir" && cargo build -q)
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
  done | median
}

generate derive
generate hand
derive=$(time_builds derive)
hand=$(time_builds hand)
awk -v d="$derive" -v h="$hand" -v n="$runs" \
  'BEGIN { printf "derive: %.2f s  hand-written: %.2f s  ratio: %.2fx  (median of %d rebuilds each)\n", d, h, d / h, n }'
