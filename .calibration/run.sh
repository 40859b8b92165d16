#!/bin/sh
# Issue 25's calibration runs, one after another, niced, 2 workers each, from a snapshot of the
# code (/tmp/q25snap: `git archive` of the commit in snapshot-commit).
L=/work/qual25/.calibration
cd /tmp/q25snap
run() { name=$1; shift; echo "== $name: python scripts/calibrate.py $* (start $(date -Is), $(uptime))" >> $L/$name.log; PYTHONPATH=/tmp/q25snap nice -n 10 /work/qual25/.venv/bin/python scripts/calibrate.py "$@" >> $L/$name.log 2>&1; echo "== end $(date -Is), $(uptime)" >> $L/$name.log; }
run sequential --only sequential --sims 2000 --jobs 2
run boots --only boots --sims 2000 --jobs 2 --fast
run mde --only mde --sims 2000 --jobs 2
run power-redrawn --only power --mode redrawn --sims 2000 --jobs 2 --fast
run slices --only slices --sims 500 --jobs 2
