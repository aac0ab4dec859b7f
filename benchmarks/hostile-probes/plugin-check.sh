#!/bin/bash
# a graph whose Plugin names a root-owned script: does check execute it?
B=$(readlink -f "$1"); D=$(mktemp -d ${TMPDIR:-/tmp}/p6.XXXX); cd $D
printf '#!/bin/sh\necho "executed by $PPID" >> %s/ran\nexit 1\n' $D > plugin.sh; chmod 700 plugin.sh
printf '[devices.in]\ndriver = "gen"\n[elements.p]\ntype = "Plugin"\npath = "%s/plugin.sh"\nelement = "X"\n[graph]\nlinks = ["FromDevice(in) -> p", "p[0] -> Discard"]\n' $D > g.toml
for args in "check -config g.toml" "graph -config g.toml" "check -plugins -config g.toml"; do
  rm -f ran; $B $args >out 2>&1; rc=$?
  echo "$args: exit $rc, script ran: $([ -f ran ] && echo yes || echo no): $(head -c 200 out | tr '\n' ' ')"
done
