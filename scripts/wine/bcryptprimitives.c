/*
 * bcryptprimitives.dll for Wine 8, which lacks it: Go 1.22 and later call its ProcessPrng
 * for random bytes at start, and die without it ("bcryptprimitives.dll not found"). This
 * one fills the buffer from advapi32's RtlGenRandom (SystemFunction036), the generator
 * Go used before. Test scaffolding for running the wrapper's Windows tests under Wine
 * (scripts/wine.sh); never shipped, never needed on Windows.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x7fffffff ? 0x7fffffff : (ULONG)len;
		if (!SystemFunction036(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
