#!/usr/bin/env python3
"""Points where two builds' (or two settings') default plans differ, from the stderr of `prefill_dq_ab plans` of each.

usage: plans_diff.py OLD.log NEW.log > points.txt
Each log line is "name:N:K M=<m> <default plan: a token split or one plan>"; prints "name:N:K M,M,..." per shape with a difference (the
POINTS input of points_ab.sh)."""
import sys


def read(path):
    d = {}
    for line in open(path):
        parts = line.rstrip('\n').split(' ', 2)
        if len(parts) == 3 and parts[1].startswith('M='):
            d[(parts[0], parts[1][2:])] = parts[2]
    return d


def main():
    old, new = read(sys.argv[1]), read(sys.argv[2])
    diff = {}
    for key in sorted(new, key=lambda k: (k[0], int(k[1]))):
        if old.get(key) != new[key]:
            diff.setdefault(key[0], []).append(key[1])
    for shape, ms in diff.items():
        print('%s %s' % (shape, ','.join(ms)))


if __name__ == '__main__':
    main()
