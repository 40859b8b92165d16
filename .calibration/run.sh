#!/bin/sh
# The long calibration runs of issue 25, one after another, niced, 2 workers each.
cd /work/qual25 && . .venv/bin/activate
run() { name=$1; shift; echo "== $name: python scripts/calibrate.py $* (start $(date -Is), $(uptime))" >> .calibration/$name.log; nice -n 10 python scripts/calibrate.py "$@" >> .calibration/$name.log 2>&1; echo "== end $(date -Is), $(uptime)" >> .calibration/$name.log; }
run sequential --only sequential --sims 2000 --jobs 2
run boots --only boots --sims 2000 --jobs 2
run slices --only slices --sims 2000 --jobs 2
run mde --only mde --sims 2000 --jobs 2
run power-redrawn --only power --mode redrawn --sims 2000 --jobs 2
