#!/usr/bin/env python3
"""cupti-trace.py: summarise a timeline written by scripts/cupti-trace.c.

    scripts/cupti-trace.py TRACE.csv [--frame-kernel NAME] [--skip SHARE] [--show N]

Prints, for the records after the first SHARE of the run (default 0.3, the warm-up):
  - per stream and kernel (names demangled by c++filt when present): count, median and
    total duration as they ran, beside the other streams' work;
  - the share of the span in which any kernel ran;
  - with a frame kernel (default: the first kernel whose name contains f41_kernel), the
    frame period (start to start) and, for frame N of the middle (--show N, default 1
    frame), every record from 0.3 periods before its start to the next frame's, relative
    to its start: where each stream waited;
  - with runtime API records (CUPTI_TRACE_API=1), the host's calls per frame and their time.
"""
import argparse, collections, shutil, statistics as st, subprocess


def demangle(names):
    if not shutil.which('c++filt'):
        return {n: n for n in names}
    out = subprocess.run(['c++filt'], input='\n'.join(names), capture_output=True,
                         text=True).stdout.split('\n')
    m = {}
    for a, b in zip(names, out):
        b = b.replace('(anonymous namespace)::', '').replace('void ', '').split('(')[0]
        if b.startswith('cub::'):
            b = 'cub:' + ('ScanInit' if 'Init' in a else 'Scan')
        m[a] = b.split('::')[-1][:32] or a[:32]
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('trace')
    ap.add_argument('--frame-kernel', default='f41_kernel')
    ap.add_argument('--skip', type=float, default=0.3)
    ap.add_argument('--show', type=int, default=1)
    o = ap.parse_args()
    rows = []
    for line in open(o.trace):
        p = line.rstrip('\n').split(',', 6)
        if len(p) == 7:
            rows.append([int(p[1]), int(p[2]), int(p[3]), p[0], int(p[4]), int(p[5]), p[6]])
    names = demangle(sorted(set(r[6] for r in rows if r[3] == 'K')))
    for r in rows:
        if r[3] == 'K':
            r[6] = names[r[6]]
        elif r[3] == 'R':
            r[6] = r[6].split('_v')[0]
    rows.sort()
    rows = rows[int(len(rows) * o.skip):]
    dev = [r for r in rows if r[3] != 'R']
    api = [r for r in rows if r[3] == 'R']
    if not dev:
        print('no device records')
        return
    span = (max(r[1] for r in dev) - dev[0][0]) / 1e3
    dur = collections.defaultdict(list)
    for r in dev:
        dur[(r[2], r[6])].append((r[1] - r[0]) / 1e3)
    print(f'{"stream":>6} {"kernel / copy":32} {"n":>6} {"median us":>10} {"total us":>10}')
    for (s, n), v in sorted(dur.items(), key=lambda kv: -sum(kv[1])):
        print(f'{s:6d} {n:32} {len(v):6d} {st.median(v):10.2f} {sum(v):10.1f}')
    iv = sorted((r[0], r[1]) for r in dev if r[3] == 'K')
    busy, (a0, b0) = 0, iv[0]
    for a, b in iv[1:]:
        if a > b0:
            busy, a0, b0 = busy + b0 - a0, a, b
        else:
            b0 = max(b0, b)
    busy += b0 - a0
    print(f'span {span:.1f} us; a kernel ran in {busy / 1e3:.1f} us ({100 * busy / 1e3 / span:.1f}%)')
    fk = [r for r in dev if r[3] == 'K' and o.frame_kernel in r[6]]
    if len(fk) < 3:
        return
    per = [(b[0] - a[0]) / 1e3 for a, b in zip(fk, fk[1:])]
    print(f'frame period ({o.frame_kernel} start to start): median {st.median(per):.1f} us, '
          f'{len(per)} frames')
    if api:
        calls = collections.defaultdict(list)
        for r in api:
            calls[r[6]].append((r[1] - r[0]) / 1e3)
        nf = len(per)
        print('host runtime calls per frame (count, us):')
        for k, v in sorted(calls.items(), key=lambda kv: -sum(kv[1]))[:12]:
            print(f'   {k:48} {len(v) / nf:6.1f} {sum(v) / nf:8.1f}')
    mid = len(fk) // 2
    for f in range(mid, min(mid + o.show, len(fk) - 1)):
        t0, t1 = fk[f][0], fk[f + 1][0]
        print(f'frame at {mid}: period {(t1 - t0) / 1e3:.1f} us (start, end, duration, '
              'stream or host thread, name, blocks or bytes)')
        for r in rows:
            if t0 - 0.3 * (t1 - t0) <= r[0] < t1 + 1000:
                print(f'  {(r[0] - t0) / 1e3:8.1f} {(r[1] - t0) / 1e3:8.1f} '
                      f'{(r[1] - r[0]) / 1e3:7.1f} {r[3]} {r[2]:>10} {r[6]} {r[4]}')


if __name__ == '__main__':
    main()
