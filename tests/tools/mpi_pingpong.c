// SPDX-License-Identifier: BSD-2-Clause
/*
 * mpi_pingpong: two ranks bounce messages of growing size (1 B .. 64 KiB)
 * back and forth, each checked byte for byte, then sum a vector with
 * MPI_Allreduce (each rank checks every element), then MPI_Finalize.  Each
 * rank prints the libibverbs.so.1 it has mapped (from /proc/self/maps),
 * so that t_mpi can tell whose verbs library the fabric used.  Built by
 * t_mpi with mpicc.  Exit 0 only if every message came back intact.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 20
#define MAX_LEN (64 * 1024)
#define NSUM 4096

/* MPI_Allreduce over both ranks: element i sums (r + 1) * i + r. */
static int allreduce_check(int rank)
{
	static long in[NSUM], out[NSUM];
	int i, bad = 0;

	for (i = 0; i < NSUM; i++)
		in[i] = (long)(rank + 1) * i + rank;
	MPI_Allreduce(in, out, NSUM, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	for (i = 0; i < NSUM; i++)
		bad += out[i] != 3L * i + 1;
	printf("rank %d allreduce: %d longs, %d wrong\n", rank, NSUM, bad);
	return bad;
}

static void print_verbs_lib(int rank)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	const char *p;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		p = strchr(line, '/');
		if (p && strstr(p, "/libibverbs.so.1")) {
			printf("rank %d libibverbs: %s", rank, p);
			break;
		}
	}
	fclose(f);
}

static unsigned char pattern(int round, size_t len, size_t i)
{
	return (unsigned char)(i * 31 + len + (size_t)round * 7);
}

int main(int argc, char **argv)
{
	static unsigned char buf[MAX_LEN];
	int rank, size, round, bad = 0, peer;
	size_t len, i;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_pingpong: needs 2 ranks, has %d\n", size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	peer = 1 - rank;
	for (len = 1; len <= MAX_LEN; len *= 4) {
		for (round = 0; round < ROUNDS; round++) {
			if (rank == 0) {
				for (i = 0; i < len; i++)
					buf[i] = pattern(round, len, i);
				MPI_Send(buf, (int)len, MPI_BYTE, peer, round,
					 MPI_COMM_WORLD);
				memset(buf, 0, len);
				MPI_Recv(buf, (int)len, MPI_BYTE, peer, round,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				for (i = 0; i < len; i++)
					bad += buf[i] != pattern(round, len, i);
			} else {
				MPI_Recv(buf, (int)len, MPI_BYTE, peer, round,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(buf, (int)len, MPI_BYTE, peer, round,
					 MPI_COMM_WORLD);
			}
		}
	}
	print_verbs_lib(rank);
	if (rank == 0)
		printf("pingpong: %d rounds of 1..%d bytes, %d bad bytes\n",
		       ROUNDS, MAX_LEN, bad);
	bad += allreduce_check(rank);
	fflush(stdout);
	MPI_Finalize();
	return bad ? 1 : 0;
}
