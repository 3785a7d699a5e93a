/** @file me.h  vidkern public API: the me family (included by vidkern.h). */
#ifndef VIDKERN_ME_H
#define VIDKERN_ME_H
/* Declarations are added by the me family. Include vidkern/vidkern.h, not this file. */
#endif
