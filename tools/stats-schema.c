// SPDX-License-Identifier: MIT
/*
 * Prints docs/stats.schema.json from api/stats.h's table: `make schema`
 * writes it, tests/test_schema.c checks that the committed file is what
 * this prints.
 */
#include <stdio.h>

#include "../api/stats.h"

int main(void)
{
	json_object *s = api_stats_schema();
	const char *text = json_object_to_json_string_ext(
		s, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
			   JSON_C_TO_STRING_NOSLASHESCAPE);

	if (!text || puts(text) < 0)
		return 1;
	json_object_put(s);
	return 0;
}
