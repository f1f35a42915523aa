// SPDX-License-Identifier: MIT
#include <string.h>

#include "inibuf.h"

struct inibuf {
	const char *text;
	size_t len, pos;
	int line;
	int long_line; /* first line that did not fit, or 0 */
};

/* An fgets() over the buffer that stops at a line too long for @num. */
static char *read_line(char *str, int num, void *stream)
{
	struct inibuf *b = stream;
	size_t n = 0, max;

	if (b->long_line || b->pos >= b->len || num < 2)
		return NULL;
	max = (size_t)num - 1;
	b->line++;
	while (n < max && b->pos + n < b->len) {
		char c = b->text[b->pos + n];

		str[n++] = c;
		if (c == '\n')
			break;
	}
	if (n == max && str[n - 1] != '\n' && b->pos + n < b->len) {
		b->long_line = b->line;
		return NULL;
	}
	b->pos += n;
	str[n] = '\0';
	return str;
}

int inibuf_parse(const char *text, size_t len, ini_handler handler, void *user,
		 bool *too_long)
{
	struct inibuf b = { .text = text, .len = len };
	int ret = ini_parse_stream(read_line, &b, handler, user);

	*too_long = !ret && b.long_line;
	return *too_long ? b.long_line : ret;
}
