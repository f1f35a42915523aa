// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <string.h>

#include "inibuf.h"

struct inibuf {
	const char *text;
	size_t len, pos;
	int line;
	int long_line; /* first line that did not fit, or 0 */
	/* inibuf_parse_lines(): */
	inibuf_handler *handler;
	void *user;
	bool after_key; /* libinih's prev_name: an indented line continues */
	int section_error; /* first section header its handler refused */
};

/*
 * libinih's reading of a section header, for the handler it does not
 * call there: the same BOM, blanks, comments, continuation lines and
 * inline comments (a ';' after a blank ends the line), so that a header
 * is the one libinih takes and its name the one it gives the keys.
 */
static void header(struct inibuf *b, const char *str)
{
	const char *start = str, *end;
	char name[256];
	bool was_space = false;

	if (b->line == 1 && (unsigned char)start[0] == 0xef &&
	    (unsigned char)start[1] == 0xbb && (unsigned char)start[2] == 0xbf)
		start += 3;
	while (isspace((unsigned char)*start))
		start++;
	if (!*start || strchr(";#", *start))
		return;
	if (b->after_key && start > str)
		return;
	if (*start != '[')
		return;
	for (end = start + 1; *end && *end != ']'; end++) {
		if (was_space && *end == ';')
			return;
		was_space = isspace((unsigned char)*end);
	}
	if (*end != ']' || (size_t)(end - start - 1) >= sizeof(name))
		return;
	memcpy(name, start + 1, (size_t)(end - start - 1));
	name[end - start - 1] = '\0';
	b->after_key = false;
	if (!b->handler(b->user, b->line, name, NULL, NULL) &&
	    !b->section_error)
		b->section_error = b->line;
}

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
	if (b->handler)
		header(b, str);
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

/* libinih's calls, for a key or a continuation line: at the line read. */
static int key(void *user, const char *section, const char *name,
	       const char *value)
{
	struct inibuf *b = user;

	/* libinih continues no key of an empty name. */
	b->after_key = name[0] != '\0';
	return b->handler(b->user, b->line, section, name, value);
}

int inibuf_parse_lines(const char *text, size_t len, inibuf_handler *handler,
		       void *user, bool *too_long, int *lines)
{
	struct inibuf b = {
		.text = text, .len = len, .handler = handler, .user = user
	};
	int ret = ini_parse_stream(read_line, &b, key, &b);

	*lines = b.line;
	if (ret < 0)
		return ret;
	if (b.section_error && (!ret || b.section_error < ret))
		ret = b.section_error;
	*too_long = !ret && b.long_line;
	return *too_long ? b.long_line : ret;
}
