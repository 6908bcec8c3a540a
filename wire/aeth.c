// SPDX-License-Identifier: BSD-2-Clause
/*
 * AETH facts beyond its layout: what an RNR NAK's timer field means.
 */
#include <urxe/wire.h>

/* IBA table 45: the timer field's 32 codes, in microseconds (0 is the longest). */
uint32_t urxe_rnr_timer_us(unsigned int code)
{
	static const uint32_t us[32] = {
		655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640,
		960, 1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480,
		30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680,
		491520,
	};

	return us[code & 31];
}
