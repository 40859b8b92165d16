#!/bin/sh
# The rest of issue 25's calibration runs, from a snapshot of the decision code (/tmp/q25snap,
# `git archive` of the commit in snapshot-commit), after the sequential run (pid 23403) ends.
while kill -0 23403 2>/dev/null; do sleep 30; done
L=/work/qual25/.calibration
cd /tmp/q25snap
run() { name=$1; shift; echo "== $name: python scripts/calibrate.py $* (start $(date -Is), $(uptime))" >> $L/$name.log; PYTHONPATH=/tmp/q25snap nice -n 10 /work/qual25/.venv/bin/python scripts/calibrate.py "$@" >> $L/$name.log 2>&1; echo "== end $(date -Is), $(uptime)" >> $L/$name.log; }
run boots --only boots --sims 2000 --jobs 2
run slices --only slices --sims 2000 --jobs 2
run mde --only mde --sims 2000 --jobs 2
run power-redrawn --only power --mode redrawn --sims 2000 --jobs 2
