#!/usr/bin/env python3
"""Write a W x H 4:2:0 Y4M mosaic of a smaller real clip (tiles side by side, the clip's
frames played forward then backward to reach N frames), for HD tests and benchmarks without
keeping HD clips in the repository.

    scripts/mosaic-y4m.py CLIP.y4m W H N OUT.y4m   (OUT '-' = stdout)
"""
import sys


def read_y4m(path):
    data = open(path, 'rb').read()
    end = data.index(b'\n')
    tags = data[:end].split()[1:]
    w = int(next(t for t in tags if t.startswith(b'W'))[1:])
    h = int(next(t for t in tags if t.startswith(b'H'))[1:])
    rate = next((t for t in tags if t.startswith(b'F')), b'F25:1')
    size, frames, pos = w * h * 3 // 2, [], end + 1
    while pos < len(data):
        pos = data.index(b'\n', pos) + 1
        frames.append(data[pos:pos + size])
        pos += size
    return w, h, rate, frames


def tile(plane, pw, ph, ow, oh):
    rows = []
    for y in range(oh):
        row = plane[(y % ph) * pw:(y % ph + 1) * pw]
        rows.append((row * (ow // pw + 1))[:ow])
    return b''.join(rows)


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    w, h, rate, frames = read_y4m(sys.argv[1])
    ow, oh, n = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    if not frames or ow % 2 or oh % 2 or w % 2 or h % 2:
        sys.exit('mosaic-y4m: need a non-empty 4:2:0 clip and even sizes')
    order = frames + frames[-2:0:-1] if len(frames) > 1 else frames
    out = sys.stdout.buffer if sys.argv[5] == '-' else open(sys.argv[5], 'wb')
    out.write(b'YUV4MPEG2 W%d H%d %s Ip A1:1 C420jpeg\n' % (ow, oh, rate))
    cache = {}
    for i in range(n):
        k = i % len(order)
        if k not in cache:
            f = order[k]
            y, u, v = f[:w * h], f[w * h:w * h * 5 // 4], f[w * h * 5 // 4:]
            cache[k] = (tile(y, w, h, ow, oh) + tile(u, w // 2, h // 2, ow // 2, oh // 2) +
                        tile(v, w // 2, h // 2, ow // 2, oh // 2))
        out.write(b'FRAME\n')
        out.write(cache[k])
    out.flush()


if __name__ == '__main__':
    main()
