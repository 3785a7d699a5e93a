// Ordering check of the CUDA executor (debug_order.cuh).
#include "debug_order.cuh"

#include <stdlib.h>
#include <string.h>

namespace vidk_cux {

namespace {

void clock_join(uint32_t *a, const uint32_t *b) {
    for (int k = 0; k < kOrderClocks; k++)
        if (b[k] > a[k]) a[k] = b[k];
}

} // namespace

void order_init(OrderCheck *o, bool on) {
    memset(o, 0, sizeof(*o));
    o->on = VIDK_CUDA_DEBUG && on;
}

void order_free(OrderCheck *o) {
    free(o->evc);
    o->evc = nullptr;
}

int order_events(OrderCheck *o, int n) {
    if (!o->on) return 0;
    free(o->evc);
    o->evc = static_cast<uint32_t(*)[kOrderClocks]>(
        calloc((size_t)(n > 0 ? n : 1), sizeof(*o->evc)));
    return o->evc ? 0 : VIDK_ERR(ENOMEM);
}

void order_queue(OrderCheck *o, int s) {
    if (o->on && s != kOrderHost) clock_join(o->vc[s], o->vc[kOrderHost]);
}

void order_record(OrderCheck *o, int ev, int s) {
    if (!o->on) return;
    order_queue(o, s);
    memcpy(o->evc[ev], o->vc[s], sizeof(o->evc[ev]));
}

void order_wait(OrderCheck *o, int s, int ev) {
    if (!o->on) return;
    order_queue(o, s);
    clock_join(o->vc[s], o->evc[ev]);
}

void order_host_sees(OrderCheck *o, int ev) {
    if (o->on) clock_join(o->vc[kOrderHost], o->evc[ev]);
}

void order_sync_all(OrderCheck *o, int ns) {
    if (!o->on) return;
    for (int i = 0; i < ns; i++)
        clock_join(o->vc[kOrderHost], o->vc[i]);
}

int order_access(OrderCheck *o, const VidkContext *ctx, const char *family,
                 const char *const *res_names, int t, int res, OrderAcc acc) {
    if (!o->on) return 0;
    order_queue(o, t);
    uint32_t *v = o->vc[t];
    v[t]++;
    for (int k = 0; k < kOrderClocks; k++) {
        if (k == t) continue;
        for (int a = 0; a < 3; a++) {
            // read-read and blocks-blocks (disjoint blocks) never conflict
            if ((a == ACC_READ && acc == ACC_READ) || (a == ACC_BLOCKS && acc == ACC_BLOCKS))
                continue;
            if (o->last[a][res][k] > v[k]) {
                static const char *const an[3] = {"read", "write", "blocks write"};
                vidk_log(ctx, VIDK_LOG_ERROR,
                         "cuda %s: unordered accesses of the %s: %s on %s %d after a %s on "
                         "%s %d not waited for",
                         family, res_names[res], an[acc], t == kOrderHost ? "host" : "stream",
                         t == kOrderHost ? 0 : t, an[a], k == kOrderHost ? "host" : "stream",
                         k == kOrderHost ? 0 : k);
                return VIDK_ERR(EIO);
            }
        }
    }
    o->last[acc][res][t] = v[t];
    return 0;
}

} // namespace vidk_cux
