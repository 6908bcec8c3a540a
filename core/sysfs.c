// SPDX-License-Identifier: BSD-2-Clause
/*
 * The historical sysfs helpers of libibverbs.  urxe devices have no sysfs
 * entries, so reads under their ibdev_path fail with ENOENT as for any
 * missing file (ibv_devinfo then prints no board id).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"

URXE_EXPORT const char *ibv_get_sysfs_path(void)
{
	const char *env = getenv("SYSFS_PATH");

	return env && *env ? env : "/sys";
}

URXE_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file,
				    char *buf, size_t size)
{
	char path[4096];
	ssize_t n;
	int fd;

	if (!buf || !size)
		return urxe_ret_minus1(-EINVAL);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return urxe_ret_minus1(-ENAMETOOLONG);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size);
	close(fd);
	if (n < 0)
		return -1;
	if ((size_t)n == size)
		n--;
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return (int)n;
}
