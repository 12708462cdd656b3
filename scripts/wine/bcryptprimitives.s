# A stand-in for Windows' bcryptprimitives.dll, for Wine 8.0 (Debian 12),
# which does not have it: Go 1.24 and later load ProcessPrng from it at
# start-up and stop without it. ProcessPrng(buf, len) fills buf with
# random bytes through advapi32's RtlGenRandom (SystemFunction036, which
# Wine has) and returns TRUE, as the real one always does. Built by
# scripts/wine-test.sh with binutils-mingw-w64 into the private prefix;
# never part of a release.
	.text
	.globl	ProcessPrng
ProcessPrng:
	subq	$40, %rsp		# shadow space, 16-byte alignment
	call	*__imp_SystemFunction036(%rip)
	addq	$40, %rsp
	movl	$1, %eax
	ret
