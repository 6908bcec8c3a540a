// SPDX-License-Identifier: BSD-2-Clause
/*
 * urxe-validate: the project's strict RoCEv2 frame validator as a program
 * of its own, for the tests (and what `urxe trace --check` runs): the
 * checks live in tools/check.c.
 */
#include "cli.h"

int main(int argc, char **argv)
{
	return urxe_cli_check("urxe-validate", argc - 1, argv + 1);
}
