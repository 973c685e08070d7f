/*
 * test_kserve_bytes.c: BYTES tensors between the wire and their slots: the
 * length-prefixed form unpacks to the strings it holds (NUL and non-UTF-8
 * bytes included) and packs back to the same bytes; a length running past
 * the end, too few or too many elements and an element over the slot's
 * room are refused naming the tensor; JSON text escapes and refuses what is
 * not UTF-8; one element round-trips through kserve_tensor_put/get.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "kserve_bytes.h"
#include "kserve_tensor.h"
#include "test_util.h"

/* Append the packed form of one element to buf at *n. */
static void
put_elem(unsigned char *buf, size_t *n, const void *s, uint32_t len)
{
	buf[*n] = (unsigned char)len;
	buf[*n + 1] = (unsigned char)(len >> 8);
	buf[*n + 2] = (unsigned char)(len >> 16);
	buf[*n + 3] = (unsigned char)(len >> 24);
	memcpy(buf + *n + 4, s, len);
	*n += 4 + len;
}

/* Whether unpacking len bytes of buf as n elements fails with a message holding want. */
static int
refused(const unsigned char *buf, size_t len, size_t n, const char *want)
{
	static unsigned char slots[8 * GRAPH_STRING_SLOT];
	char *cause = NULL;
	int ok;

	ok = kserve_bytes_unpack(buf, len, n, slots, "input", "TEXT", &cause) != 0 && cause != NULL &&
	    strstr(cause, "input 'TEXT'") != NULL && strstr(cause, want) != NULL;
	if (!ok)
		fprintf(stderr, "message: %s\n", cause ? cause : "(none)");
	free(cause);
	return ok;
}

/* Packed data round-trips, with its byte count; every malformed form is refused. */
static void
test_unpack(void)
{
	static unsigned char buf[1024], slots[4 * GRAPH_STRING_SLOT], back[1024];
	char *cause = NULL, big[GRAPH_STRING_MAX + 1];
	const char *s;
	size_t n = 0, len;

	put_elem(buf, &n, "he\0llo", 6);
	put_elem(buf, &n, "", 0);
	put_elem(buf, &n, "\xff\xfe", 2);
	put_elem(buf, &n, "42", 2);
	CHECK(kserve_bytes_unpack(buf, n, 4, slots, "input", "TEXT", &cause) == 0, "%s", cause);
	s = graph_string_get(slots, &len);
	CHECK(len == 6 && memcmp(s, "he\0llo", 6) == 0, "element 0: %zu bytes", len);
	s = graph_string_get(slots + GRAPH_STRING_SLOT, &len);
	CHECK(len == 0, "element 1: %zu bytes", len);
	CHECK(kserve_bytes_packed_size(slots, 4) == n, "packed size %zu, want %zu", kserve_bytes_packed_size(slots, 4), n);
	kserve_bytes_pack(slots, 4, back);
	CHECK(memcmp(back, buf, n) == 0, "packing gives other bytes");
	CHECK(refused(buf, n - 1, 4, "runs past the end"), "a short last element");
	CHECK(refused(buf, n - 4, 4, "ends before element 3"), "a missing last element");
	CHECK(refused(buf, n, 3, "more than the 3 elements"), "an element too many");
	CHECK(refused(buf, 3, 1, "ends before element 0"), "a length cut short");
	memset(big, 'x', sizeof big);
	n = 0;
	put_elem(buf, &n, big, sizeof big);
	CHECK(refused(buf, n, 1, "at most 252 bytes"), "an element over the slot's room");
	n = 0;
	put_elem(buf, &n, big, GRAPH_STRING_MAX);
	CHECK(kserve_bytes_unpack(buf, n, 1, slots, "input", "TEXT", &cause) == 0, "%s", cause);
	free(cause);
}

/* JSON text: escaped, within its bound; an element that is not UTF-8 is refused. */
static void
test_json(void)
{
	static unsigned char slots[3 * GRAPH_STRING_SLOT];
	char text[4096], *cause = NULL;
	size_t len = 0;

	graph_string_put(slots, "a\"b\\", 4);
	graph_string_put(slots + GRAPH_STRING_SLOT, "\0\n", 2);
	graph_string_put(slots + 2 * GRAPH_STRING_SLOT, "\xc3\xa9", 2);
	CHECK(kserve_bytes_json(slots, 3, text, sizeof text, &len, &cause) == 0, "%s", cause);
	CHECK(len <= kserve_bytes_json_bound(slots, 3), "%zu bytes over the bound", len);
	CHECK(len == strlen("[\"a\\\"b\\\\\",\"\\u0000\\n\",\"\xc3\xa9\"]") &&
	    memcmp(text, "[\"a\\\"b\\\\\",\"\\u0000\\n\",\"\xc3\xa9\"]", len) == 0, "text %.*s", (int)len, text);
	graph_string_put(slots + GRAPH_STRING_SLOT, "\xff", 1);
	CHECK(kserve_bytes_json(slots, 3, text, sizeof text, &len, &cause) != 0 && cause != NULL &&
	    strstr(cause, "element 1 is not UTF-8") != NULL, "non-UTF-8 accepted: %s", cause ? cause : "");
	free(cause);
}

/* kserve_tensor_put/get on one BYTES element: strings only, at most GRAPH_STRING_MAX bytes. */
static void
test_put_get(void)
{
	unsigned char slot[GRAPH_STRING_SLOT];
	char big[GRAPH_STRING_MAX + 2];
	json_t *v = json_stringn("x\0y", 3), *back, *num = json_integer(3), *lng;
	int nonfinite;

	memset(big, 'y', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	lng = json_string(big);
	memset(slot, 0xaa, sizeof slot);
	CHECK(kserve_tensor_put(GRAPH_DT_STRING, v, slot) == KSERVE_PUT_OK, "a string refused");
	CHECK(slot[7] == 0 && slot[GRAPH_STRING_SLOT - 1] == 0, "the slot's rest is not zeroed");
	back = kserve_tensor_get(GRAPH_DT_STRING, slot, &nonfinite);
	CHECK(back != NULL && json_equal(back, v), "the element does not come back");
	CHECK(kserve_tensor_put(GRAPH_DT_STRING, num, slot) == KSERVE_PUT_KIND, "a number taken as BYTES");
	CHECK(kserve_tensor_put(GRAPH_DT_STRING, lng, slot) == KSERVE_PUT_RANGE, "an element over the slot taken");
	CHECK(strcmp(kserve_tensor_kind(GRAPH_DT_STRING), "a string") == 0, "kind %s", kserve_tensor_kind(GRAPH_DT_STRING));
	json_decref(v);
	json_decref(back);
	json_decref(num);
	json_decref(lng);
}

int
main(void)
{
	test_unpack();
	test_json();
	test_put_get();
	if (test_failures == 0)
		printf("PASS: test_kserve_bytes\n");
	return test_failures ? 1 : 0;
}
