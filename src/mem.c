#include <stdlib.h>

#include "internal.h"

void *vidk_malloc_aligned(size_t align, size_t size) {
    void *p = NULL;
    if (!size || posix_memalign(&p, align, size)) return NULL;
    return p;
}

void vidk_free_aligned(void *p) {
    free(p);
}

int vidk_mul_size(size_t a, size_t b, size_t *out) {
    if (a && b > SIZE_MAX / a) return 0;
    *out = a * b;
    return 1;
}
