// Host-side SIMT emulator for the motion-search kernels (src/cuda/me_kern.cuh): runs
// them on a CPU, one thread block at a time, each CUDA thread a ucontext fiber, so the
// kernels can be executed and checked on a machine without a GPU. Not part of the
// library build (CMake globs only src/cuda/*.cu); ctest runs it through
// tests/test_me_emu.cpp (me_emu, me_emu_passes); by hand:
//
//   g++ -std=c++17 -O2 -x c++ -DVIDK_ME_EMU_MAIN -I include -I <build>/include -I src
//       src/cuda/me_emu.cuh -o me_emu && ./me_emu [seed [cases]]
//   (one line; <build> is any configured build folder, for vidkern/version.h). Targeted
//   runs: EMU_R=64 EMU_W=40 EMU_H=36 EMU_BD=8 EMU_SHAPES=0x7f ./me_emu 8 2; EMU_CFG=0|1|2
//   one kernel configuration; EMU_FLAGS=0x20 fail on a plan without those kernel flags.
//
// The emulator itself (fibers, barriers, the built-ins) is src/cuda/simt_emu.h; this file
// adds __ldg with the band guard below.
// The driver (VIDK_ME_EMU_MAIN) follows src/cuda/me.cu: same plan, bands uploaded one
// at a time into planes pre-filled with garbage (so a band that reads rows it did not
// upload shows up), and compares every field with an independent serial reference.
#ifndef VIDK_CUDA_ME_EMU_CUH
#define VIDK_CUDA_ME_EMU_CUH

#include "cuda/simt_emu.h"

#define VK_HD
#define VK_DYN_SMEM(T, name) T *name = reinterpret_cast<T *>(emu::dyn_smem())

// Planes in "device" memory of which only a prefix of rows is uploaded: a read past it
// is the bug a band pipeline can have (reading rows before their copy has landed).
namespace emu {
struct Guard {
    const unsigned char *base = nullptr;
    size_t valid = 0, total = 0;
};
static Guard g_guard[2];
inline void check_read(const void *p, size_t n) {
    const unsigned char *c = static_cast<const unsigned char *>(p);
    for (const Guard &g : g_guard)
        if (g.base && c >= g.base && c < g.base + g.total && c + n > g.base + g.valid)
            fail("read of plane rows that are not uploaded yet");
}
} // namespace emu
template <typename T> inline T __ldg(const T *p) {
    emu::check_read(p, sizeof(T));
    return *p;
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    const unsigned long long v = (unsigned long long)y << 32 | x;
    unsigned r = 0;
    for (int i = 0; i < 4; i++)
        r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 255u) << (8 * i);
    return r;
}

#include "cuda/me_kern.cuh"

#ifdef VIDK_ME_EMU_MAIN
// ---------------------------------------------------------------------------------------
// Driver: the kernels on random pictures against a serial reference of me.h.

using namespace vidk_me;

struct Pic {
    int w, h, bd;
    std::vector<uint16_t> s;
    int at(int x, int y) const {
        x = x < 0 ? 0 : x >= w ? w - 1 : x;
        y = y < 0 ? 0 : y >= h ? h - 1 : y;
        return s[(size_t)y * w + x];
    }
};

static const char *const kNames[] = {"4x4",  "8x4",   "4x8",   "8x8",  "16x8",
                                     "8x16", "16x16", "32x32", "64x64"};
static uint32_t g_seed = 1;
static uint32_t rnd32() {
    g_seed ^= g_seed << 13;
    g_seed ^= g_seed >> 17;
    g_seed ^= g_seed << 5;
    return g_seed;
}
static int rnd(int lo, int hi) {
    return lo + (int)(rnd32() % (uint32_t)(hi - lo + 1));
}

// Straight from me.h: every shape, every candidate, full SAD, tie rules.
static void reference(const Pic &c, const Pic &r, const VidkMeParams &p,
                      const std::vector<VidkMv> &pred, std::vector<VidkMeResult> *out) {
    const int R = p.range, mb_w = (c.w + 15) / 16;
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        if (!(p.shapes & (1u << bs))) continue;
        int gw, gh;
        field_grid(c.w, c.h, bs, &gw, &gh);
        const int bw = bs_w(bs), bh = bs_h(bs);
        out[bs].assign((size_t)gw * gh, VidkMeResult());
        for (int by = 0; by < gh; by++)
            for (int bx = 0; bx < gw; bx++) {
                const int x0 = bx * bw, y0 = by * bh;
                int px = 0, py = 0;
                if (p.lambda && !pred.empty()) {
                    const VidkMv v = pred[(size_t)(y0 / 16) * mb_w + x0 / 16];
                    px = v.x, py = v.y;
                }
                unsigned bc = 0xffffffffu, bsad = 0, bd = 0;
                int bmx = 0, bmy = 0;
                for (int my = -R; my <= R; my++)
                    for (int mx = -R; mx <= R; mx++) {
                        unsigned sad = 0;
                        for (int y = 0; y < bh; y++)
                            for (int x = 0; x < bw; x++)
                                sad += (unsigned)abs(c.at(x0 + x, y0 + y) -
                                                     r.at(x0 + x + mx, y0 + y + my));
                        const unsigned cost =
                            sad + p.lambda * (mv_bits(mx - px) + mv_bits(my - py));
                        const unsigned d = (unsigned)(abs(mx) + abs(my));
                        if (cost < bc || (cost == bc && d < bd))
                            bc = cost, bsad = sad, bd = d, bmx = mx, bmy = my;
                    }
                VidkMeResult &o = out[bs][(size_t)by * gw + bx];
                o.mv.x = (int16_t)bmx, o.mv.y = (int16_t)bmy, o.cost = bc, o.sad = bsad;
            }
    }
}

// Searches whose plan had the shifted window copies (F_SHIFT).
static int g_emu_shift;

// me.cu's flow on the emulator.
static int emu_search(const Pic &c, const Pic &r, const VidkMeParams &p,
                      const std::vector<VidkMv> &pred, int sms, int cfg,
                      std::vector<VidkMeResult> *out, int *path_out) {
    int maxabs = 0;
    for (const VidkMv &v : pred)
        maxabs = vk_imax(maxabs, vk_imax(vk_abs(v.x), vk_abs(v.y)));
    MePlan pl;
    if (make_plan(&pl, c.w, c.h, c.bd, &p, maxabs, sms) < 0) return -1;
    if (pl.path != PATH_GENERIC && pl.smem > smem_limit(pl.flags))
        return -3; // me.cu refuses it
    // EMU_FLAGS=F: every plan must have the kernel flags F (e.g. 0x20, F_SHIFT).
    const char *ef = getenv("EMU_FLAGS");
    const unsigned need = ef ? (unsigned)strtoul(ef, NULL, 0) : 0u;
    if ((pl.flags & need) != need) {
        fprintf(stderr, "EMU_FLAGS=0x%x: a plan with flags 0x%x\n", need, (unsigned)pl.flags);
        return -5;
    }
    g_emu_shift += (pl.flags & F_SHIFT) != 0;
    *path_out = pl.path;
    emu::g_block.errors = 0;
    const int bps = c.bd > 8 ? 2 : 1;
    std::vector<unsigned char> dc(pl.plane_bytes + 64, 0xcd), dr(pl.plane_bytes + 64, 0xcd);
    std::vector<unsigned long long> keys(pl.nkeys, kKeyNone);
    std::vector<VidkMeResult> res(pl.nres + 1);
    MeArgs a = base_args(&pl);
    a.cur = dc.data(), a.ref = dr.data();
    a.cur16 = (const uint16_t *)dc.data(), a.ref16 = (const uint16_t *)dr.data();
    a.pred = p.lambda && !pred.empty() ? pred.data() : nullptr;
    a.keys = keys.data();
    int cur_done = 0, ref_done = 0;
    for (int b = 0; b < pl.nbands; b++) {
        int cr, rr;
        band_rows(&pl, b, &cr, &rr);
        auto up = [&](const Pic &src, std::vector<unsigned char> &dst, int y0, int y1) {
            for (int y = y0; y < y1; y++)
                for (int x = 0; x < src.w; x++) {
                    const uint16_t v = src.s[(size_t)y * src.w + x];
                    if (bps == 1)
                        dst[(size_t)y * pl.pitch + x] = (unsigned char)v;
                    else
                        memcpy(&dst[((size_t)y * pl.pitch + x) * 2], &v, 2);
                }
        };
        up(c, dc, cur_done, cr), cur_done = vk_imax(cur_done, cr);
        up(r, dr, ref_done, rr), ref_done = vk_imax(ref_done, rr);
        emu::g_guard[0] = {dc.data(), (size_t)cur_done * pl.pitch * bps, dc.size()};
        emu::g_guard[1] = {dr.data(), (size_t)ref_done * pl.pitch * bps, dr.size()};
        a.gy0 = pl.band_g0[b], a.gyn = pl.band_gn[b];
        if (pl.path == PATH_GENERIC) {
            for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
                if (!(p.shapes & (1u << bs))) continue;
                MeArgs g = a;
                g.g_bs = bs, g.g_gw = pl.gw[bs], g.g_gh = pl.gh[bs], g.g_slice = 64;
                const unsigned gx = (unsigned)((pl.gw[bs] * pl.gh[bs] + 7) / 8);
                const unsigned gy = (unsigned)((pl.N * pl.N + g.g_slice - 1) / g.g_slice);
                if (bps == 1)
                    emu::launch(dim3(gx, gy), dim3(256), 0,
                                [&] { generic_kernel<uint8_t>(g); });
                else
                    emu::launch(dim3(gx, gy), dim3(256), 0,
                                [&] { generic_kernel<uint16_t>(g); });
            }
        } else {
            const unsigned nb = (unsigned)(pl.GW * a.gyn * pl.ncb * pl.nsl);
            auto run = [&](auto kern) {
                emu::launch(dim3(nb), dim3(pl.threads), pl.smem, [&] { kern(a); });
            };
            switch (pl.path * 32 + pl.flags) {
// clang-format off
#define F16C(fl) case PATH_F16 * 32 + (fl): if (cfg) run(f16_kernel_r2<(fl)>); else run(f16_kernel<(fl)>); break;
#define F41C(fl) case PATH_F41 * 32 + (fl): if (cfg == 2 && (((fl) & ~F_LAMBDA) == 0 || !((fl) & F_LAMBDA))) run(f41_kernel_r3<(fl)>); else if (cfg) run(f41_kernel_r2<(fl)>); else run(f41_kernel<(fl)>); break;
                F16C(0) F16C(F_BIG) F16C(F_LAMBDA) F16C(F_BIG | F_LAMBDA)
                F41C(0) F41C(F_MID) F41C(F_MID | F_BIG) F41C(F_SUB | F_MID) F41C(F_SUB | F_MID | F_BIG)
                F41C(F_LAMBDA) F41C(F_MID | F_LAMBDA) F41C(F_MID | F_BIG | F_LAMBDA)
                F41C(F_SUB | F_MID | F_LAMBDA) F41C(F_SUB | F_MID | F_BIG | F_LAMBDA)
                F41C(F_SUB | F_MID | F_NO4) F41C(F_SUB | F_MID | F_NO4 | F_LAMBDA)
                F41C(F_SUB | F_MID | F_NO4 | F_SHIFT) F41C(F_SUB | F_MID | F_NO4 | F_LAMBDA | F_SHIFT)
#undef F16C
#undef F41C
            default: fprintf(stderr, "emu: no kernel for path %d flags %d\n", pl.path, pl.flags); return -1;
            }
            // clang-format on
        }
        FinArgs f = FinArgs();
        f.keys = keys.data(), f.res = res.data(), f.R = pl.R, f.N = pl.N, f.lambda = pl.lambda;
        f.pred = a.pred, f.mb_w = pl.mb_w;
        int maxn = 0;
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
            if (!(p.shapes & (1u << bs))) continue;
            const int si = f.nshape++;
            f.bs[si] = bs, f.key_off[si] = pl.key_off[bs], f.key_ew[si] = pl.key_ew[bs];
            f.gw[si] = pl.gw[bs], f.res_off[si] = pl.res_off[bs];
            band_block_rows(&pl, b, bs, &f.row0[si], &f.rows[si]);
            maxn = vk_imax(maxn, f.rows[si] * f.gw[si]);
        }
        if (maxn)
            emu::launch(dim3((unsigned)((maxn + 255) / 256), (unsigned)f.nshape), dim3(256), 0,
                        [&] { finalize_kernel(f); });
    }
    emu::g_guard[0] = emu::g_guard[1] = emu::Guard();
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        if (!(p.shapes & (1u << bs))) continue;
        out[bs].assign(res.begin() + pl.res_off[bs],
                       res.begin() + pl.res_off[bs] + (size_t)pl.gw[bs] * pl.gh[bs]);
    }
    return emu::g_block.errors ? -2 : 0;
}

static void fill(Pic &p, int mode) {
    const int mx = (1 << p.bd) - 1;
    for (int y = 0; y < p.h; y++)
        for (int x = 0; x < p.w; x++) {
            int v;
            switch (mode) {
            case 0:
                v = rnd(0, mx);
                break; // noise
            case 1:
                v = rnd(0, 1) * mx;
                break; // extremes
            case 2:
                v = mx / 2 + rnd(0, 1);
                break; // flat: ties everywhere
            default:
                v = ((x * 7 + y * 3) & 63) * mx / 63 + rnd(0, 2);
                break; // texture
            }
            p.s[(size_t)y * p.w + x] = (uint16_t)vk_clamp(v, 0, mx);
        }
}

static void fill_moved_emu(const Pic &c, Pic &r) {
    const int dx = rnd(-40, 40), dy = rnd(-40, 40), mxv = (1 << c.bd) - 1;
    for (int y = 0; y < c.h; y++)
        for (int x = 0; x < c.w; x++)
            r.s[(size_t)y * c.w + x] =
                (uint16_t)vk_clamp(c.at(x + dx, y + dy) + rnd(-2, 2), 0, mxv);
}

int main(int argc, char **argv) {
    g_seed = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 12345u;
    const int ncase = argc > 2 ? atoi(argv[2]) : 40;
    fprintf(stderr, "seed %u\n", g_seed);
    const unsigned masks[] = {VIDK_ME_SHAPE(VIDK_BLOCK_16x16),
                              VIDK_ME_SHAPE(VIDK_BLOCK_4x4),
                              VIDK_ME_SHAPES_H264,
                              VIDK_ME_SHAPES_ALL,
                              VIDK_ME_SHAPE(VIDK_BLOCK_32x32),
                              VIDK_ME_SHAPE(VIDK_BLOCK_64x64),
                              VIDK_ME_SHAPE(VIDK_BLOCK_4x4) | VIDK_ME_SHAPE(VIDK_BLOCK_16x16),
                              VIDK_ME_SHAPE(VIDK_BLOCK_4x4) | VIDK_ME_SHAPE(VIDK_BLOCK_64x64),
                              VIDK_ME_SHAPE(VIDK_BLOCK_8x8) | VIDK_ME_SHAPE(VIDK_BLOCK_32x32),
                              VIDK_ME_SHAPE(VIDK_BLOCK_16x8),
                              VIDK_ME_SHAPE(VIDK_BLOCK_8x16),
                              VIDK_ME_SHAPE(VIDK_BLOCK_16x16) |
                                  VIDK_ME_SHAPE(VIDK_BLOCK_32x32) |
                                  VIDK_ME_SHAPE(VIDK_BLOCK_64x64)};
    const int nmask = (int)(sizeof(masks) / sizeof(masks[0]));
    int fails = 0;
    for (int ci = 0; ci < ncase; ci++) {
        Pic c, r;
        const int big = rnd(0, 3) == 0;
        c.w = big ? rnd(65, 140) : rnd(1, 70);
        c.h = big ? rnd(16, 80) : rnd(1, 70);
        if (rnd(0, 4) == 0) c.h = rnd(380, 460), c.w = rnd(1, 20); // several bands
        c.bd = rnd(0, 4) == 0 ? 10 : 8;
        r.w = c.w, r.h = c.h, r.bd = c.bd;
        c.s.resize((size_t)c.w * c.h), r.s.resize(c.s.size());
        const int mode = rnd(0, 3);
        fill(c, mode);
        if (rnd(0, 1)) { // ref = shifted cur + noise: real motion
            const int dx = rnd(-5, 5), dy = rnd(-5, 5), mxv = (1 << c.bd) - 1;
            for (int y = 0; y < c.h; y++)
                for (int x = 0; x < c.w; x++)
                    r.s[(size_t)y * c.w + x] =
                        (uint16_t)vk_clamp(c.at(x + dx, y + dy) + rnd(-2, 2), 0, mxv);
        } else {
            fill(r, mode);
        }
        VidkMeParams p;
        memset(&p, 0, sizeof(p));
        const int rs[] = {0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 20};
        p.range = rs[rnd(0, 11)];
        if (rnd(0, 9) == 0)
            p.range = VIDK_ME_MAX_RANGE, c.w = vk_imin(c.w, 8), c.h = vk_imin(c.h, 8);
        if (p.range == VIDK_ME_MAX_RANGE) {
            r.w = c.w, r.h = c.h, c.s.resize((size_t)c.w * c.h), r.s.resize(c.s.size());
            fill(c, mode), fill(r, mode);
        }
        p.shapes = rnd(0, 3) == 0 ? (unsigned)rnd(1, 511) : masks[rnd(0, nmask - 1)];
        // Targeted runs: EMU_R / EMU_SHAPES / EMU_W / EMU_H / EMU_BD override the draw.
        if (getenv("EMU_R")) p.range = atoi(getenv("EMU_R"));
        if (getenv("EMU_SHAPES")) p.shapes = (unsigned)strtoul(getenv("EMU_SHAPES"), NULL, 0);
        if (getenv("EMU_W") || getenv("EMU_H") || getenv("EMU_BD")) {
            if (getenv("EMU_W")) c.w = atoi(getenv("EMU_W"));
            if (getenv("EMU_H")) c.h = atoi(getenv("EMU_H"));
            if (getenv("EMU_BD")) c.bd = atoi(getenv("EMU_BD"));
            r.w = c.w, r.h = c.h, r.bd = c.bd;
            c.s.resize((size_t)c.w * c.h), r.s.resize(c.s.size());
            fill(c, mode);
            fill_moved_emu(c, r);
        }
        const int lmode = rnd(0, 5);
        p.lambda = lmode < 3    ? 0
                   : lmode == 3 ? (unsigned)rnd(1, 8)
                   : lmode == 4 ? (unsigned)rnd(1, 300)
                                : 65535u;
        std::vector<VidkMv> pred;
        if (p.lambda && rnd(0, 3)) {
            const int n = ((c.w + 15) / 16) * ((c.h + 15) / 16);
            const int pm = rnd(0, 3) == 0 ? 32767 : 12;
            for (int i = 0; i < n; i++)
                pred.push_back(VidkMv{(int16_t)rnd(-pm, pm), (int16_t)rnd(-pm, pm)});
        }
        std::vector<VidkMeResult> want[VIDK_BLOCK_COUNT], got[VIDK_BLOCK_COUNT];
        reference(c, r, p, pred, want);
        int path = -1, bad = 0;
        const int sms = rnd(1, 4);
        // Every kernel configuration (r1, r2, r3; me.cu picks by VIDK_ME_KCFG) on every
        // case; EMU_CFG=0, 1 or 2 runs one.
        for (int cfg = 0; cfg < 3 && !bad; cfg++) {
            if (getenv("EMU_CFG") && atoi(getenv("EMU_CFG")) != cfg) continue;
            const int e = emu_search(c, r, p, pred, sms, cfg, got, &path);
            bad = e < 0;
            if (bad) fprintf(stderr, "  config r%d: emulator error %d\n", cfg + 1, e);
            for (int bs = 0; bs < VIDK_BLOCK_COUNT && !bad; bs++) {
                if (!(p.shapes & (1u << bs))) continue;
                for (size_t i = 0; i < want[bs].size(); i++) {
                    const VidkMeResult &x = got[bs][i], &y = want[bs][i];
                    if (x.mv.x != y.mv.x || x.mv.y != y.mv.y || x.cost != y.cost ||
                        x.sad != y.sad) {
                        if (bad++ < 5)
                            fprintf(stderr,
                                    "  r%d %s block %zu: got (%d,%d) cost %u sad %u, want "
                                    "(%d,%d) cost %u sad %u\n",
                                    cfg + 1, kNames[bs], i, x.mv.x, x.mv.y, x.cost, x.sad,
                                    y.mv.x, y.mv.y, y.cost, y.sad);
                    }
                }
            }
        }
        fprintf(
            stderr,
            "case %2d: %3dx%-3d bd %2d R %3d shapes 0x%03x lambda %5u pred %d path %d: %s\n",
            ci, c.w, c.h, c.bd, p.range, p.shapes, p.lambda, (int)!pred.empty(), path,
            bad ? "FAIL" : "ok");
        fails += bad != 0;
    }
    fprintf(stderr, "%d of %d cases failed; %d searches with shifted window copies\n", fails,
            ncase, g_emu_shift);
    return fails != 0;
}
#endif
#endif
