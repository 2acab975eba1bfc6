#!/usr/bin/env bash
# Remake every picture of the README's gallery, from the repository root:
#   bash docs/gallery/make_gallery.sh
# Needs the package installed (`pip install -e .`) and Graphviz's `dot`. The tiny training
# run and gradflow --steps 300 take about a minute each on a quiet laptop CPU; the rest, seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
g=docs/gallery
run_dir="${RUN_DIR:-out/gallery-tiny}"

microtensor graph --preset baby --depth 1 --output "$g/gpt_depth1.svg"
microtensor graph --preset baby --focus blocks.0.attn --output "$g/attention_graph.svg"
microtensor graph --preset tiny --focus blocks.0 --depth 1 --rankdir LR --output "$g/residual_block.svg"
microtensor gradflow --n-layer 12 --steps 300 --output "$g/gradflow.png"
microtensor train --preset tiny --eval-interval 25 --out "$run_dir" --quiet
microtensor plot-loss --metrics "$run_dir/metrics.jsonl" --output "$g/loss_curve.png"
microtensor attention --out "$run_dir" --prompt "def __init__(self):" --layer 1 --output "$g/attention_heatmap.png"
