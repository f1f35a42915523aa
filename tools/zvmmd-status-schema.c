// SPDX-License-Identifier: MIT
/*
 * Prints docs/zvmmd-status.schema.json from lib/zvmmd_status.h's rows:
 * `make schema` writes it, tests/test_pool_status.c checks that the
 * committed file is what this prints.
 */
#include <stdio.h>

#include "../lib/zvmmd_status.h"

int main(void)
{
	json_object *s = zvmmd_status_json_schema();
	const char *text = json_object_to_json_string_ext(
		s, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
			   JSON_C_TO_STRING_NOSLASHESCAPE);

	if (!text || puts(text) < 0)
		return 1;
	json_object_put(s);
	return 0;
}
