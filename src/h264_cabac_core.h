/* H.264 CABAC (9.3): the arithmetic encoding engine (9.3.4.2-9.3.4.6), the context
 * variables' initialisation (9.3.1.1) and the tables it reads, written once for every backend
 * (C and CUDA device code: VIDK_CORE). Contexts 0..459 (4:2:0 frame macroblocks need no
 * more); P slices with cabac_init_idc 0. The tables are the standard's: Tables 9-12 to 9-33
 * (m, n by ctxIdx, I slices and cabac_init_idc 0), 9-44 (rangeTabLPS) and 9-45 (transIdxLPS;
 * transIdxMPS is min(pStateIdx + 1, 62), 63 kept). */
#ifndef VIDK_H264_CABAC_CORE_H
#define VIDK_H264_CABAC_CORE_H

#include "h264_cavlc_core.h" /* VidkBits */
#include "vidk_core.h"

#define VIDK_H264_CABAC_CTX 460

// clang-format off
#define VIDK_H264_CABAC_INIT_I {  \
    {20, -15}, {2, 54}, {3, 74}, {20, -15}, {2, 54}, {3, 74}, {-28, 127}, {-23, 104}, /* 0 */ \
    {-6, 53}, {-1, 54}, {7, 51}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, /* 8 */ \
    {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, /* 16 */ \
    {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, /* 24 */ \
    {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, /* 32 */ \
    {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, /* 40 */ \
    {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, /* 48 */ \
    {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 41}, {0, 63}, {0, 63}, {0, 63}, /* 56 */ \
    {-9, 83}, {4, 86}, {0, 97}, {-7, 72}, {13, 41}, {3, 62}, {0, 11}, {1, 55}, /* 64 */ \
    {0, 69}, {-17, 127}, {-13, 102}, {0, 82}, {-7, 74}, {-21, 107}, {-27, 127}, {-31, 127}, /* 72 */ \
    {-24, 127}, {-18, 95}, {-27, 127}, {-21, 114}, {-30, 127}, {-17, 123}, {-12, 115}, {-16, 122}, /* 80 */ \
    {-11, 115}, {-12, 63}, {-2, 68}, {-15, 84}, {-13, 104}, {-3, 70}, {-8, 93}, {-10, 90}, /* 88 */ \
    {-30, 127}, {-1, 74}, {-6, 97}, {-7, 91}, {-20, 127}, {-4, 56}, {-5, 82}, {-7, 76}, /* 96 */ \
    {-22, 125}, {-7, 93}, {-11, 87}, {-3, 77}, {-5, 71}, {-4, 63}, {-4, 68}, {-12, 84}, /* 104 */ \
    {-7, 62}, {-7, 65}, {8, 61}, {5, 56}, {-2, 66}, {1, 64}, {0, 61}, {-2, 78}, /* 112 */ \
    {1, 50}, {7, 52}, {10, 35}, {0, 44}, {11, 38}, {1, 45}, {0, 46}, {5, 44}, /* 120 */ \
    {31, 17}, {1, 51}, {7, 50}, {28, 19}, {16, 33}, {14, 62}, {-13, 108}, {-15, 100}, /* 128 */ \
    {-13, 101}, {-13, 91}, {-12, 94}, {-10, 88}, {-16, 84}, {-10, 86}, {-7, 83}, {-13, 87}, /* 136 */ \
    {-19, 94}, {1, 70}, {0, 72}, {-5, 74}, {18, 59}, {-8, 102}, {-15, 100}, {0, 95}, /* 144 */ \
    {-4, 75}, {2, 72}, {-11, 75}, {-3, 71}, {15, 46}, {-13, 69}, {0, 62}, {0, 65}, /* 152 */ \
    {21, 37}, {-15, 72}, {9, 57}, {16, 54}, {0, 62}, {12, 72}, {24, 0}, {15, 9}, /* 160 */ \
    {8, 25}, {13, 18}, {15, 9}, {13, 19}, {10, 37}, {12, 18}, {6, 29}, {20, 33}, /* 168 */ \
    {15, 30}, {4, 45}, {1, 58}, {0, 62}, {7, 61}, {12, 38}, {11, 45}, {15, 39}, /* 176 */ \
    {11, 42}, {13, 44}, {16, 45}, {12, 41}, {10, 49}, {30, 34}, {18, 42}, {10, 55}, /* 184 */ \
    {17, 51}, {17, 46}, {0, 89}, {26, -19}, {22, -17}, {26, -17}, {30, -25}, {28, -20}, /* 192 */ \
    {33, -23}, {37, -27}, {33, -23}, {40, -28}, {38, -17}, {33, -11}, {40, -15}, {41, -6}, /* 200 */ \
    {38, 1}, {41, 17}, {30, -6}, {27, 3}, {26, 22}, {37, -16}, {35, -4}, {38, -8}, /* 208 */ \
    {38, -3}, {37, 3}, {38, 5}, {42, 0}, {35, 16}, {39, 22}, {14, 48}, {27, 37}, /* 216 */ \
    {21, 60}, {12, 68}, {2, 97}, {-3, 71}, {-6, 42}, {-5, 50}, {-3, 54}, {-2, 62}, /* 224 */ \
    {0, 58}, {1, 63}, {-2, 72}, {-1, 74}, {-9, 91}, {-5, 67}, {-5, 27}, {-3, 39}, /* 232 */ \
    {-2, 44}, {0, 46}, {-16, 64}, {-8, 68}, {-10, 78}, {-6, 77}, {-10, 86}, {-12, 92}, /* 240 */ \
    {-15, 55}, {-10, 60}, {-6, 62}, {-4, 65}, {-12, 73}, {-8, 76}, {-7, 80}, {-9, 88}, /* 248 */ \
    {-17, 110}, {-11, 97}, {-20, 84}, {-11, 79}, {-6, 73}, {-4, 74}, {-13, 86}, {-13, 96}, /* 256 */ \
    {-11, 97}, {-19, 117}, {-8, 78}, {-5, 33}, {-4, 48}, {-2, 53}, {-3, 62}, {-13, 71}, /* 264 */ \
    {-10, 79}, {-12, 86}, {-13, 90}, {-14, 97}, {0, 0}, {-6, 93}, {-6, 84}, {-8, 79}, /* 272 */ \
    {0, 66}, {-1, 71}, {0, 62}, {-2, 60}, {-2, 59}, {-5, 75}, {-3, 62}, {-4, 58}, /* 280 */ \
    {-9, 66}, {-1, 79}, {0, 71}, {3, 68}, {10, 44}, {-7, 62}, {15, 36}, {14, 40}, /* 288 */ \
    {16, 27}, {12, 29}, {1, 44}, {20, 36}, {18, 32}, {5, 42}, {1, 48}, {10, 62}, /* 296 */ \
    {17, 46}, {9, 64}, {-12, 104}, {-11, 97}, {-16, 96}, {-7, 88}, {-8, 85}, {-7, 85}, /* 304 */ \
    {-9, 85}, {-13, 88}, {4, 66}, {-3, 77}, {-3, 76}, {-6, 76}, {10, 58}, {-1, 76}, /* 312 */ \
    {-1, 83}, {-7, 99}, {-14, 95}, {2, 95}, {0, 76}, {-5, 74}, {0, 70}, {-11, 75}, /* 320 */ \
    {1, 68}, {0, 65}, {-14, 73}, {3, 62}, {4, 62}, {-1, 68}, {-13, 75}, {11, 55}, /* 328 */ \
    {5, 64}, {12, 70}, {15, 6}, {6, 19}, {7, 16}, {12, 14}, {18, 13}, {13, 11}, /* 336 */ \
    {13, 15}, {15, 16}, {12, 23}, {13, 23}, {15, 20}, {14, 26}, {14, 44}, {17, 40}, /* 344 */ \
    {17, 47}, {24, 17}, {21, 21}, {25, 22}, {31, 27}, {22, 29}, {19, 35}, {14, 50}, /* 352 */ \
    {10, 57}, {7, 63}, {-2, 77}, {-4, 82}, {-3, 94}, {9, 69}, {-12, 109}, {36, -35}, /* 360 */ \
    {36, -34}, {32, -26}, {37, -30}, {44, -32}, {34, -18}, {34, -15}, {40, -15}, {33, -7}, /* 368 */ \
    {35, -5}, {33, 0}, {38, 2}, {33, 13}, {23, 35}, {13, 58}, {29, -3}, {26, 0}, /* 376 */ \
    {22, 30}, {31, -7}, {35, -15}, {34, -3}, {34, 3}, {36, -1}, {34, 5}, {32, 11}, /* 384 */ \
    {35, 5}, {34, 12}, {39, 11}, {30, 29}, {34, 26}, {29, 39}, {19, 66}, {31, 21}, /* 392 */ \
    {31, 31}, {25, 50}, {-17, 120}, {-20, 112}, {-18, 114}, {-11, 85}, {-15, 92}, {-14, 89}, /* 400 */ \
    {-26, 71}, {-15, 81}, {-14, 80}, {0, 68}, {-14, 70}, {-24, 56}, {-23, 68}, {-24, 50}, /* 408 */ \
    {-11, 74}, {23, -13}, {26, -13}, {40, -15}, {49, -14}, {44, 3}, {45, 6}, {44, 34}, /* 416 */ \
    {33, 54}, {19, 82}, {-3, 75}, {-1, 23}, {1, 34}, {1, 43}, {0, 54}, {-2, 55}, /* 424 */ \
    {0, 61}, {1, 64}, {0, 68}, {-9, 92}, {-14, 106}, {-13, 97}, {-15, 90}, {-12, 90}, /* 432 */ \
    {-18, 88}, {-10, 73}, {-9, 79}, {-14, 86}, {-10, 73}, {-10, 70}, {-10, 69}, {-5, 66}, /* 440 */ \
    {-9, 64}, {-5, 58}, {2, 59}, {21, -10}, {24, -11}, {28, -8}, {28, -1}, {29, 3}, /* 448 */ \
    {29, 9}, {35, 20}, {29, 36}, {14, 67}} /* 456 */
#define VIDK_H264_CABAC_INIT_P0 {  \
    {20, -15}, {2, 54}, {3, 74}, {20, -15}, {2, 54}, {3, 74}, {-28, 127}, {-23, 104}, /* 0 */ \
    {-6, 53}, {-1, 54}, {7, 51}, {23, 33}, {23, 2}, {21, 0}, {1, 9}, {0, 49}, /* 8 */ \
    {-37, 118}, {5, 57}, {-13, 78}, {-11, 65}, {1, 62}, {12, 49}, {-4, 73}, {17, 50}, /* 16 */ \
    {18, 64}, {9, 43}, {29, 0}, {26, 67}, {16, 90}, {9, 104}, {-46, 127}, {-20, 104}, /* 24 */ \
    {1, 67}, {-13, 78}, {-11, 65}, {1, 62}, {-6, 86}, {-17, 95}, {-6, 61}, {9, 45}, /* 32 */ \
    {-3, 69}, {-6, 81}, {-11, 96}, {6, 55}, {7, 67}, {-5, 86}, {2, 88}, {0, 58}, /* 40 */ \
    {-3, 76}, {-10, 94}, {5, 54}, {4, 69}, {-3, 81}, {0, 88}, {-7, 67}, {-5, 74}, /* 48 */ \
    {-4, 74}, {-5, 80}, {-7, 72}, {1, 58}, {0, 41}, {0, 63}, {0, 63}, {0, 63}, /* 56 */ \
    {-9, 83}, {4, 86}, {0, 97}, {-7, 72}, {13, 41}, {3, 62}, {0, 45}, {-4, 78}, /* 64 */ \
    {-3, 96}, {-27, 126}, {-28, 98}, {-25, 101}, {-23, 67}, {-28, 82}, {-20, 94}, {-16, 83}, /* 72 */ \
    {-22, 110}, {-21, 91}, {-18, 102}, {-13, 93}, {-29, 127}, {-7, 92}, {-5, 89}, {-7, 96}, /* 80 */ \
    {-13, 108}, {-3, 46}, {-1, 65}, {-1, 57}, {-9, 93}, {-3, 74}, {-9, 92}, {-8, 87}, /* 88 */ \
    {-23, 126}, {5, 54}, {6, 60}, {6, 59}, {6, 69}, {-1, 48}, {0, 68}, {-4, 69}, /* 96 */ \
    {-8, 88}, {-2, 85}, {-6, 78}, {-1, 75}, {-7, 77}, {2, 54}, {5, 50}, {-3, 68}, /* 104 */ \
    {1, 50}, {6, 42}, {-4, 81}, {1, 63}, {-4, 70}, {0, 67}, {2, 57}, {-2, 76}, /* 112 */ \
    {11, 35}, {4, 64}, {1, 61}, {11, 35}, {18, 25}, {12, 24}, {13, 29}, {13, 36}, /* 120 */ \
    {-10, 93}, {-7, 73}, {-2, 73}, {13, 46}, {9, 49}, {-7, 100}, {9, 53}, {2, 53}, /* 128 */ \
    {5, 53}, {-2, 61}, {0, 56}, {0, 56}, {-13, 63}, {-5, 60}, {-1, 62}, {4, 57}, /* 136 */ \
    {-6, 69}, {4, 57}, {14, 39}, {4, 51}, {13, 68}, {3, 64}, {1, 61}, {9, 63}, /* 144 */ \
    {7, 50}, {16, 39}, {5, 44}, {4, 52}, {11, 48}, {-5, 60}, {-1, 59}, {0, 59}, /* 152 */ \
    {22, 33}, {5, 44}, {14, 43}, {-1, 78}, {0, 60}, {9, 69}, {11, 28}, {2, 40}, /* 160 */ \
    {3, 44}, {0, 49}, {0, 46}, {2, 44}, {2, 51}, {0, 47}, {4, 39}, {2, 62}, /* 168 */ \
    {6, 46}, {0, 54}, {3, 54}, {2, 58}, {4, 63}, {6, 51}, {6, 57}, {7, 53}, /* 176 */ \
    {6, 52}, {6, 55}, {11, 45}, {14, 36}, {8, 53}, {-1, 82}, {7, 55}, {-3, 78}, /* 184 */ \
    {15, 46}, {22, 31}, {-1, 84}, {25, 7}, {30, -7}, {28, 3}, {28, 4}, {32, 0}, /* 192 */ \
    {34, -1}, {30, 6}, {30, 6}, {32, 9}, {31, 19}, {26, 27}, {26, 30}, {37, 20}, /* 200 */ \
    {28, 34}, {17, 70}, {1, 67}, {5, 59}, {9, 67}, {16, 30}, {18, 32}, {18, 35}, /* 208 */ \
    {22, 29}, {24, 31}, {23, 38}, {18, 43}, {20, 41}, {11, 63}, {9, 59}, {9, 64}, /* 216 */ \
    {-1, 94}, {-2, 89}, {-9, 108}, {-6, 76}, {-2, 44}, {0, 45}, {0, 52}, {-3, 64}, /* 224 */ \
    {-2, 59}, {-4, 70}, {-4, 75}, {-8, 82}, {-17, 102}, {-9, 77}, {3, 24}, {0, 42}, /* 232 */ \
    {0, 48}, {0, 55}, {-6, 59}, {-7, 71}, {-12, 83}, {-11, 87}, {-30, 119}, {1, 58}, /* 240 */ \
    {-3, 29}, {-1, 36}, {1, 38}, {2, 43}, {-6, 55}, {0, 58}, {0, 64}, {-3, 74}, /* 248 */ \
    {-10, 90}, {0, 70}, {-4, 29}, {5, 31}, {7, 42}, {1, 59}, {-2, 58}, {-3, 72}, /* 256 */ \
    {-3, 81}, {-11, 97}, {0, 58}, {8, 5}, {10, 14}, {14, 18}, {13, 27}, {2, 40}, /* 264 */ \
    {0, 58}, {-3, 70}, {-6, 79}, {-8, 85}, {0, 0}, {-13, 106}, {-16, 106}, {-10, 87}, /* 272 */ \
    {-21, 114}, {-18, 110}, {-14, 98}, {-22, 110}, {-21, 106}, {-18, 103}, {-21, 107}, {-23, 108}, /* 280 */ \
    {-26, 112}, {-10, 96}, {-12, 95}, {-5, 91}, {-9, 93}, {-22, 94}, {-5, 86}, {9, 67}, /* 288 */ \
    {-4, 80}, {-10, 85}, {-1, 70}, {7, 60}, {9, 58}, {5, 61}, {12, 50}, {15, 50}, /* 296 */ \
    {18, 49}, {17, 54}, {10, 41}, {7, 46}, {-1, 51}, {7, 49}, {8, 52}, {9, 41}, /* 304 */ \
    {6, 47}, {2, 55}, {13, 41}, {10, 44}, {6, 50}, {5, 53}, {13, 49}, {4, 63}, /* 312 */ \
    {6, 64}, {-2, 69}, {-2, 59}, {6, 70}, {10, 44}, {9, 31}, {12, 43}, {3, 53}, /* 320 */ \
    {14, 34}, {10, 38}, {-3, 52}, {13, 40}, {17, 32}, {7, 44}, {7, 38}, {13, 50}, /* 328 */ \
    {10, 57}, {26, 43}, {14, 11}, {11, 14}, {9, 11}, {18, 11}, {21, 9}, {23, -2}, /* 336 */ \
    {32, -15}, {32, -15}, {34, -21}, {39, -23}, {42, -33}, {41, -31}, {46, -28}, {38, -12}, /* 344 */ \
    {21, 29}, {45, -24}, {53, -45}, {48, -26}, {65, -43}, {43, -19}, {39, -10}, {30, 9}, /* 352 */ \
    {18, 26}, {20, 27}, {0, 57}, {-14, 82}, {-5, 75}, {-19, 97}, {-35, 125}, {27, 0}, /* 360 */ \
    {28, 0}, {31, -4}, {27, 6}, {34, 8}, {30, 10}, {24, 22}, {33, 19}, {22, 32}, /* 368 */ \
    {26, 31}, {21, 41}, {26, 44}, {23, 47}, {16, 65}, {14, 71}, {8, 60}, {6, 63}, /* 376 */ \
    {17, 65}, {21, 24}, {23, 20}, {26, 23}, {27, 32}, {28, 23}, {28, 24}, {23, 40}, /* 384 */ \
    {24, 32}, {28, 29}, {23, 42}, {19, 57}, {22, 53}, {22, 61}, {11, 86}, {12, 40}, /* 392 */ \
    {11, 51}, {14, 59}, {-4, 79}, {-7, 71}, {-5, 69}, {-9, 70}, {-8, 66}, {-10, 68}, /* 400 */ \
    {-19, 73}, {-12, 69}, {-16, 70}, {-15, 67}, {-20, 62}, {-19, 70}, {-16, 66}, {-22, 65}, /* 408 */ \
    {-20, 63}, {9, -2}, {26, -9}, {33, -9}, {39, -7}, {41, -2}, {45, 3}, {49, 9}, /* 416 */ \
    {45, 27}, {36, 59}, {-6, 66}, {-7, 35}, {-7, 42}, {-8, 45}, {-5, 48}, {-12, 56}, /* 424 */ \
    {-6, 60}, {-5, 62}, {-8, 66}, {-8, 76}, {-5, 85}, {-6, 81}, {-10, 77}, {-7, 81}, /* 432 */ \
    {-17, 80}, {-18, 73}, {-4, 74}, {-10, 83}, {-9, 71}, {-9, 67}, {-1, 61}, {-8, 66}, /* 440 */ \
    {-14, 66}, {0, 59}, {2, 59}, {21, -13}, {33, -14}, {39, -7}, {46, -2}, {51, 2}, /* 448 */ \
    {60, 6}, {61, 17}, {55, 34}, {42, 62}} /* 456 */
#define VIDK_H264_CABAC_RANGE_LPS {  \
    {128, 176, 208, 240}, {128, 167, 197, 227}, {128, 158, 187, 216}, {123, 150, 178, 205}, \
    {116, 142, 169, 195}, {111, 135, 160, 185}, {105, 128, 152, 175}, {100, 122, 144, 166}, \
    {95, 116, 137, 158}, {90, 110, 130, 150}, {85, 104, 123, 142}, {81, 99, 117, 135}, \
    {77, 94, 111, 128}, {73, 89, 105, 122}, {69, 85, 100, 116}, {66, 80, 95, 110}, \
    {62, 76, 90, 104}, {59, 72, 86, 99}, {56, 69, 81, 94}, {53, 65, 77, 89}, \
    {51, 62, 73, 85}, {48, 59, 69, 80}, {46, 56, 66, 76}, {43, 53, 63, 72}, \
    {41, 50, 59, 69}, {39, 48, 56, 65}, {37, 45, 54, 62}, {35, 43, 51, 59}, \
    {33, 41, 48, 56}, {32, 39, 46, 53}, {30, 37, 43, 50}, {29, 35, 41, 48}, \
    {27, 33, 39, 45}, {26, 31, 37, 43}, {24, 30, 35, 41}, {23, 28, 33, 39}, \
    {22, 27, 32, 37}, {21, 26, 30, 35}, {20, 24, 29, 33}, {19, 23, 27, 31}, \
    {18, 22, 26, 30}, {17, 21, 25, 28}, {16, 20, 23, 27}, {15, 19, 22, 25}, \
    {14, 18, 21, 24}, {14, 17, 20, 23}, {13, 16, 19, 22}, {12, 15, 18, 21}, \
    {12, 14, 17, 20}, {11, 14, 16, 19}, {11, 13, 15, 18}, {10, 12, 15, 17}, \
    {10, 12, 14, 16}, {9, 11, 13, 15}, {9, 11, 12, 14}, {8, 10, 12, 14}, \
    {8, 9, 11, 13}, {7, 9, 11, 12}, {7, 9, 10, 12}, {7, 8, 10, 11}, \
    {6, 8, 9, 11}, {6, 7, 9, 10}, {6, 7, 8, 9}, {2, 2, 2, 2}}
#define VIDK_H264_CABAC_TRANS_LPS {  \
    0, 0, 1, 2, 2, 4, 4, 5, 6, 7, 8, 9, 9, 11, 11, 12, \
    13, 13, 15, 15, 16, 16, 18, 18, 19, 19, 21, 21, 22, 22, 23, 24, \
    24, 25, 26, 26, 27, 27, 28, 29, 29, 30, 30, 30, 31, 32, 32, 33, \
    33, 33, 34, 34, 35, 35, 35, 36, 36, 36, 37, 37, 37, 38, 38, 63}
// clang-format on
VIDK_CORE_TABLE(int8_t, vidk_h264_cabac_init_i, [VIDK_H264_CABAC_CTX][2],
                VIDK_H264_CABAC_INIT_I)
VIDK_CORE_TABLE(int8_t, vidk_h264_cabac_init_p0, [VIDK_H264_CABAC_CTX][2],
                VIDK_H264_CABAC_INIT_P0)
VIDK_CORE_TABLE(uint8_t, vidk_h264_cabac_range_lps, [64][4], VIDK_H264_CABAC_RANGE_LPS)
VIDK_CORE_TABLE(uint8_t, vidk_h264_cabac_trans_lps, [64], VIDK_H264_CABAC_TRANS_LPS)

/* The encoder (9.3.4), its arithmetic exactly the standard's (Figures 9-6 to 9-12) with its
 * bits written a byte at a time. The standard keeps codILow in 10 bits and, on each
 * renormalising doubling, decides the bit leaving at the top: 0, 1, or "outstanding" (a later
 * carry may still flip it); the first such bit is dropped (firstBitFlag). Here low keeps the
 * bits that left the 10-bit register too: bits 0..9 are codILow, the q bits above them the
 * output not yet written, bit 10 + q a carry into them. Initially q = -1: the first bit to
 * leave (always 0: codILow + codIRange < 2^9 at the start, so no carry ever reaches it) takes
 * the carry's place of the first byte. Once q >= 8 the top 8 bits and the carry go out
 * (vidk_cabac_out): a byte of 0xff waits (ff counts them) as a later carry would turn it into
 * 0x00 and add one to the byte before; any other byte settles the ones before it. A byte
 * with a carry is never 0xff (a carry comes from adding codIRange < 2^9 at bit 0, which
 * leaves the bits from q + 2 on as they were or, carrying, 0), so the byte before the 0xff
 * bytes takes the carry without passing it further. tests/test_h264_cabac_core.c checks
 * the bits against the standard's engine transcribed bit by bit. */
typedef struct VidkCabac {
    VidkBits *b;
    uint8_t *buf;   /* b's bytes, written from byte p on (the slice data is byte-aligned) */
    size_t p, cap;  /* the next byte; b->cap */
    uint32_t low;   /* codILow and the bits above it (at most 10 + 15 + 1) */
    uint32_t range; /* codIRange */
    int q;          /* output bits held in low (-1..15) */
    uint32_t ff;    /* 0xff bytes waiting */
    int overflow;   /* a byte went past cap */
    uint64_t bins;  /* bins coded (the slice's cabac_zero_words, 7.4.2.10) */
    /* each context's pStateIdx << 1 | valMPS, VIDK_H264_CABAC_CTX bytes held by the caller
     * (apart from the rest, which a GPU thread then keeps in registers) */
    uint8_t *st;
    /* Tables 9-44 (rangeTabLPS, [pStateIdx][qCodIRangeIdx]) and 9-45 (transIdxLPS): the
     * core's, or a copy where it is nearer (a GPU block's shared memory) */
    const uint8_t (*lps)[4];
    const uint8_t *tlps;
} VidkCabac;

/* 9.3.1.1: context k's initial state for a slice of QP qp (0..51), intra (I slice) or not
 * (P slice, cabac_init_idc 0). */
VIDK_CORE uint8_t vidk_cabac_init_context(int k, int intra, int qp) {
    const int q = vidk_clip3(qp, 0, 51);
    const int m = intra ? VIDK_CORE_TAB(vidk_h264_cabac_init_i)[k][0]
                        : VIDK_CORE_TAB(vidk_h264_cabac_init_p0)[k][0];
    const int n = intra ? VIDK_CORE_TAB(vidk_h264_cabac_init_i)[k][1]
                        : VIDK_CORE_TAB(vidk_h264_cabac_init_p0)[k][1];
    const int pre = vidk_clip3(((m * q) >> 4) + n, 1, 126);
    return (uint8_t)(pre <= 63 ? (63 - pre) << 1 : (pre - 64) << 1 | 1);
}

/* Every context of st (VIDK_H264_CABAC_CTX) likewise. */
VIDK_CORE void vidk_cabac_init_contexts(uint8_t *st, int intra, int qp) {
    for (int k = 0; k < VIDK_H264_CABAC_CTX; k++)
        st[k] = vidk_cabac_init_context(k, intra, qp);
}

/* 9.3.4.1: the engine at the slice data's start, b byte-aligned (after
 * cabac_alignment_one_bit), the contexts st (initialised); b is not written through its own
 * calls until the flush. */
VIDK_CORE void vidk_cabac_start(VidkCabac *c, VidkBits *b, uint8_t *st) {
    c->st = st;
    c->lps = VIDK_CORE_TAB(vidk_h264_cabac_range_lps);
    c->tlps = VIDK_CORE_TAB(vidk_h264_cabac_trans_lps);
    c->b = b;
    c->buf = b->buf;
    c->p = b->pos >> 3;
    c->cap = b->cap;
    c->overflow = b->overflow;
    c->low = 0;
    c->range = 510;
    c->q = -1;
    c->ff = 0;
    c->bins = 0;
}

VIDK_CORE void vidk_cabac_byte(VidkCabac *c, unsigned v) {
    if (c->p < c->cap && c->buf)
        c->buf[c->p] = (uint8_t)v;
    else
        c->overflow = 1;
    c->p++;
}

/* One byte of output with its carry (out: 0..0x1fe). */
VIDK_CORE void vidk_cabac_out(VidkCabac *c, uint32_t out) {
    if (out == 0xff) {
        c->ff++;
        return;
    }
    const uint32_t carry = out >> 8;
    if (carry && c->p > 0 && c->p <= c->cap && c->buf) c->buf[c->p - 1]++;
    for (; c->ff; c->ff--)
        vidk_cabac_byte(c, carry ? 0x00 : 0xff);
    vidk_cabac_byte(c, out & 0xff);
}

/* Once 8 or more bits are held in low: the top byte and its carry out (q stays below 16). */
VIDK_CORE void vidk_cabac_emit(VidkCabac *c) {
    if (c->q >= 8) {
        const int lo = c->q + 2; /* the byte's lowest bit */
        vidk_cabac_out(c, c->low >> lo);
        c->low &= (1u << lo) - 1;
        c->q -= 8;
    }
}

/* RenormE (Figure 9-7) for s doublings (s <= 7). */
VIDK_CORE void vidk_cabac_shift(VidkCabac *c, int s) {
    c->range <<= s;
    c->low <<= s;
    c->q += s;
    vidk_cabac_emit(c);
}

/* The doublings that bring codIRange (2..255) to 256 or more. */
VIDK_CORE int vidk_cabac_renorm_shift(uint32_t range) {
    return 8 - vidk_hibit32(range);
}

/* EncodeDecision (Figure 9-7): bin with context ctx. */
VIDK_CORE void vidk_cabac_put(VidkCabac *c, int ctx, int bin) {
    const int s = c->st[ctx], p = s >> 1, mps = s & 1;
    const uint32_t lps = c->lps[p][(c->range >> 6) & 3];
    c->range -= lps;
    if (bin != mps) {
        c->low += c->range;
        c->range = lps;
        c->st[ctx] = (uint8_t)(c->tlps[p] << 1 | (p ? mps : !mps));
    } else {
        c->st[ctx] = (uint8_t)((p < 62 ? p + 1 : p) << 1 | mps);
    }
    c->bins++;
    if (c->range < 256) vidk_cabac_shift(c, vidk_cabac_renorm_shift(c->range));
}

/* EncodeBypass (Figure 9-10). */
VIDK_CORE void vidk_cabac_bypass(VidkCabac *c, int bin) {
    c->low <<= 1;
    if (bin) c->low += c->range;
    c->q++;
    vidk_cabac_emit(c);
    c->bins++;
}

/* EncodeTerminate (Figure 9-11; end_of_slice_flag, the I_PCM bin): with bin 1 the engine is
 * flushed (EncodeFlush, Figure 9-12: PutBit of codILow's bit 9, then its bit 8 and the
 * rbsp_stop_one_bit), every byte written and b's position just after the stop bit. */
VIDK_CORE void vidk_cabac_terminate(VidkCabac *c, int bin) {
    c->range -= 2;
    c->bins++;
    if (!bin) {
        if (c->range < 256) vidk_cabac_shift(c, vidk_cabac_renorm_shift(c->range));
        return;
    }
    c->low += c->range;
    c->range = 2;
    vidk_cabac_shift(c, 7);
    /* the held bits, codILow's bits 9 and 8, the stop bit: n bits (and the carry above) */
    int n = c->q + 3;
    uint32_t x = (c->low >> 8) << 1 | 1;
    while (n >= 8) {
        vidk_cabac_out(c, x >> (n - 8));
        x &= (1u << (n - 8)) - 1;
        n -= 8;
    }
    if (n > 0) vidk_cabac_out(c, x << (8 - n)); /* never 0xff: its low bits are 0 */
    for (; c->ff; c->ff--)
        vidk_cabac_byte(c, 0xff);
    VidkBits *b = c->b;
    if (c->overflow) {
        b->overflow = 1;
        return;
    }
    b->pos = c->p * 8 - (size_t)(n > 0 ? 8 - n : 0);
    b->part = n > 0 ? (uint32_t)(c->buf[c->p - 1] >> (8 - n)) : 0;
}

/* The macroblock layer emits bins (h264_stream_cabac.h), the engine codes them afterwards in
 * order: the binarisation and context selection need only the neighbours' syntax, never the
 * engine's state. A bin: the context in bits 0..8 (0..459, VIDK_CABAC_BYPASS,
 * VIDK_CABAC_TERM: EncodeBypass, EncodeTerminate), the value in bit 15. */
#define VIDK_CABAC_BYPASS 510
#define VIDK_CABAC_TERM   511
typedef struct VidkCabacBins {
    uint16_t *b;
    uint32_t n;   /* bins emitted */
    uint32_t cap; /* room in b: bins past it are counted, not stored (n > cap: overflow) */
} VidkCabacBins;

VIDK_CORE void vidk_cabac_bin(VidkCabacBins *o, int ctx, int bin) {
    if (o->n < o->cap) o->b[o->n] = (uint16_t)(ctx | (bin ? 0x8000 : 0));
    o->n++;
}

/* The k-th order Exp-Golomb suffix of UEGk (9.3.2.3) of the value s, in bypass bins. */
VIDK_CORE void vidk_cabac_eg_bypass(VidkCabacBins *o, int s, int k) {
    while (s >= (1 << k))
        vidk_cabac_bin(o, VIDK_CABAC_BYPASS, 1), s -= 1 << k, k++;
    vidk_cabac_bin(o, VIDK_CABAC_BYPASS, 0);
    while (k--)
        vidk_cabac_bin(o, VIDK_CABAC_BYPASS, (s >> k) & 1);
}

/* Code one bin of a list. */
VIDK_CORE void vidk_cabac_code_bin(VidkCabac *c, unsigned b) {
    const int ctx = (int)(b & 511), bin = (int)(b >> 15);
    if (ctx == VIDK_CABAC_BYPASS)
        vidk_cabac_bypass(c, bin);
    else if (ctx == VIDK_CABAC_TERM)
        vidk_cabac_terminate(c, bin);
    else
        vidk_cabac_put(c, ctx, bin);
}

/* Code n bins in order. */
VIDK_CORE void vidk_cabac_code_bins(VidkCabac *c, const uint16_t *b, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        vidk_cabac_code_bin(c, b[i]);
}

#endif
