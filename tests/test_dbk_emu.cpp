// The device's deblocking filter (src/cuda/dbk_kern.cuh: dbk_filter_warp, kDbkRows macroblock
// rows a block) run on the host through the SIMT emulator (src/cuda/simt_emu.h: each CUDA
// thread a fiber, exact warp barriers, blocks one after another in grid order) against the
// coding loop's filter in raster order (enc/enc_core.h enc_h264_dbk_line_at, every backend's
// reference): random pictures, sizes (one macroblock column or row, odd and even rows), bS
// (mostly 0, as in coded frames; 0 on the picture's border, where the encoder never filters)
// and QPs. The planes' margins must stay as they were. Checks the kernel's logic without a
// GPU (CI); not its timing or the order between blocks that a GPU runs at once (the
// device's tests do: test_encode --cuda). Arguments: seed, cases.
#include "cuda/simt_emu.h"

#include "enc/enc_core.h"

#define __shared__ static    // (deblock_kernel's; blocks run one at a time)
constexpr int kDbkMail = 24; // the encoder's is encode_cuda.cuh's; any >= 24 serves
#include "cuda/dbk_kern.cuh"

namespace {

uint32_t g_seed = 1;
uint32_t rnd() {
    return emu::xorshift32(g_seed);
}

constexpr int kMargin = 24; // bytes around every plane, rows above and below too

struct Planes {
    std::vector<uint8_t> buf[3];
    int cs[3], h[3];
    uint8_t *at(int p) { return buf[p].data() + (size_t)kMargin * cs[p] + kMargin; }
};

long g_filtered = 0; // samples the reference changed, over all cases (the test is not empty)

// One case: a uw x uh picture; returns the number of differing samples (margins included).
int run_case(int uw, int uh, int qp, int qpc, int smooth, unsigned tag) {
    Planes a;
    for (int p = 0; p < 3; p++) {
        const int w = (p ? 8 : 16) * uw, hh = (p ? 8 : 16) * uh;
        a.cs[p] = w + 2 * kMargin + (int)(rnd() % 3) * 4, a.h[p] = hh;
        a.buf[p].resize((size_t)a.cs[p] * (hh + 2 * kMargin));
        int v = (int)(rnd() & 255);
        for (auto &s : a.buf[p]) { // smooth: small steps (the filter's thresholds pass)
            v = smooth ? (v + (int)(rnd() % 9) - 4) & 255 : (int)(rnd() & 255);
            s = (uint8_t)v;
        }
    }
    Planes ref = a;
    std::vector<uint8_t> bs((size_t)uw * uh * 32);
    for (int u = 0; u < uw * uh; u++)
        for (int k = 0; k < 32; k++) {
            const int d = k >> 4, e = (k >> 2) & 3, x = u % uw, y = u / uw;
            const bool border = e == 0 && (d ? y == 0 : x == 0);
            const uint32_t c = rnd() % 16;
            bs[(size_t)u * 32 + k] = border ? 0 : (uint8_t)(c < 7 ? 0 : c < 15 ? 1 + c % 3 : 4);
        }
    EncFrame f;
    memset(&f, 0, sizeof f);
    f.uw = uw, f.uh = uh, f.qp = qp, f.qpc = qpc;
    // the reference: every macroblock in raster order
    for (int p = 0; p < 3; p++)
        f.rec[p] = ref.at(p), f.cs[p] = ref.cs[p];
    for (int y = 0; y < uh; y++)
        for (int x = 0; x < uw; x++) {
            int b[32];
            for (int k = 0; k < 32; k++)
                b[k] = bs[((size_t)y * uw + x) * 32 + k];
            for (int p = 0; p < 3; p++)
                for (int d = 0; d < 2; d++)
                    for (int e = 0; e < (p ? 2 : 4); e++)
                        for (int i = 0; i < (p ? 8 : 16); i++)
                            enc_h264_dbk_line_at(&f, x, y, p, d, e, i, b);
        }
    for (int p = 0; p < 3; p++)
        for (size_t k = 0; k < a.buf[p].size(); k++)
            g_filtered += a.buf[p][k] != ref.buf[p][k];
    // the kernel's warps, a block per kDbkRows rows; the mailbox holds an older frame's tags
    for (int p = 0; p < 3; p++)
        f.rec[p] = a.at(p), f.cs[p] = a.cs[p];
    std::vector<unsigned long long> mail((size_t)uw * uh * kDbkMail,
                                         (unsigned long long)(tag - 1) << 32 | 0x5a5a5a5au);
    const unsigned grid = (unsigned)(uh + kDbkRows - 1) / kDbkRows;
    std::vector<DbkShared> sh(grid);
    memset(sh.data(), 0xa5, sh.size() * sizeof(DbkShared)); // garbage, as on a GPU
    emu::launch(dim3(grid), dim3(kDbkThreads), 0, [&] {
        const int t = (int)threadIdx.x, b = (int)blockIdx.x;
        if (t < 32)
            dbk_filter_warp<false>(f, bs.data(), mail.data(), tag, sh[b], kDbkRows * b, t & 31);
        else
            dbk_filter_warp<true>(f, bs.data(), mail.data(), tag, sh[b], kDbkRows * b, t & 31);
    });
    int bad = 0;
    for (int p = 0; p < 3; p++)
        for (size_t k = 0; k < a.buf[p].size(); k++)
            if (a.buf[p][k] != ref.buf[p][k]) {
                if (bad < 5) {
                    const int row = (int)(k / a.cs[p]) - kMargin,
                              col = (int)(k % a.cs[p]) - kMargin;
                    fprintf(stderr, "  plane %d row %d column %d: %d, the reference %d\n", p,
                            row, col, a.buf[p][k], ref.buf[p][k]);
                }
                bad++;
            }
    return bad + emu::g_block.errors;
}

} // namespace

int main(int argc, char **argv) {
    g_seed = argc > 1 ? (uint32_t)atoi(argv[1]) * 2654435761u + 1 : 1;
    const int cases = argc > 2 ? atoi(argv[2]) : 40;
    int failed = 0;
    for (int c = 0; c < cases; c++) {
        // the first cases: one column, one row, two rows; then random sizes up to 9 x 7
        const int uw = c == 0 ? 1 : c == 1 ? 5 : c == 2 ? 4 : 1 + (int)(rnd() % 9);
        const int uh = c == 0 ? 3 : c == 1 ? 1 : c == 2 ? 2 : 1 + (int)(rnd() % 7);
        const int qp = c % 4 == 3 ? 51 : 16 + (int)(rnd() % 36);
        const int qpc = qp < 30 ? qp : qp - (int)(rnd() % 8);
        const int smooth = c % 3 != 2;
        const unsigned tag = 1 + (rnd() % 1000);
        emu::g_order = c % 4; // threads run in every order (barriers)
        const int bad = run_case(uw, uh, qp, qpc, smooth, tag);
        if (bad) {
            fprintf(stderr, "case %d: %dx%d macroblocks, QP %d / %d: %d samples differ\n", c,
                    uw, uh, qp, qpc, bad);
            failed++;
        }
    }
    printf("dbk_emu: %d of %d cases equal the raster-order filter (%ld samples filtered)\n",
           cases - failed, cases, g_filtered);
    if (g_filtered < 1000)
        fprintf(stderr, "dbk_emu: too few samples filtered to mean anything\n");
    return failed || g_filtered < 1000 ? 1 : 0;
}
