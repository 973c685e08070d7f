/* test_repository_scan.c: repository layouts, version directories and every version_policy, on temporary trees. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "repository_scan.h"
#include "test_util.h"

/* Make root/rel (one level) or fail the test. */
static void
make_dir(const char *root, const char *rel)
{
	char *path;

	if (asprintf(&path, "%s/%s", root, rel) == -1 || mkdir(path, 0700) != 0) {
		perror(rel);
		exit(1);
	}
	free(path);
}

/* Make root/name with the given version directories and model.json text (NULL: none). */
static void
make_model(const char *root, const char *name, const char *const *versions, const char *json)
{
	char *dir;

	make_dir(root, name);
	if (asprintf(&dir, "%s/%s", root, name) == -1)
		exit(1);
	for (; versions != NULL && *versions != NULL; versions++)
		make_dir(dir, *versions);
	if (json != NULL)
		test_write_file(dir, "model.json", json, strlen(json));
	free(dir);
}

/* Make a model with versions 1, 2, 5 under the policy text (a JSON value, or NULL for none). */
static void
make_policy(const char *root, const char *name, const char *policy)
{
	static const char *const v125[] = { "1", "2", "5", NULL };
	char *json = NULL;

	if (policy != NULL && asprintf(&json, "{\"version_policy\": %s}", policy) == -1)
		exit(1);
	make_model(root, name, v125, json);
	free(json);
}

/* The entry called name, or NULL. */
static const struct repository_entry *
find(const struct repository_entry *e, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(e[i].name, name) == 0)
			return &e[i];
	return NULL;
}

/* The entry must have exactly the versions want (n of them) and no error. */
static void
expect_versions(const struct repository_entry *e, size_t ne, const char *name, const int64_t *want, size_t n)
{
	const struct repository_entry *x = find(e, ne, name);
	size_t i;

	CHECK(x != NULL, "%s: no entry", name);
	if (x == NULL)
		return;
	CHECK(x->error == NULL, "%s: error %s", name, x->error);
	CHECK(x->nversions == n, "%s: %zu versions, want %zu", name, x->nversions, n);
	for (i = 0; i < n && i < x->nversions; i++)
		CHECK(x->versions[i] == want[i], "%s: versions[%zu] = %lld, want %lld", name, i,
		    (long long)x->versions[i], (long long)want[i]);
}

/* The entry must be an error whose message holds every one of want. */
static void
expect_error(const struct repository_entry *e, size_t ne, const char *name, const char *const *want)
{
	const struct repository_entry *x = find(e, ne, name);

	CHECK(x != NULL, "%s: no entry", name);
	if (x == NULL)
		return;
	CHECK(x->error != NULL && x->nversions == 0 && x->versions == NULL, "%s: no error", name);
	if (x->error != NULL)
		printf("%s refused as expected: %s\n", name, x->error);
	for (; x->error != NULL && *want != NULL; want++)
		CHECK(strstr(x->error, *want) != NULL, "%s: message lacks '%s': %s", name, *want, x->error);
}

/* Layouts: flat, versioned (numeric order), hidden entries, files at the top, the largest version. */
static void
build_layouts(const char *root)
{
	static const char *const v_multi[] = { "1", "3", "10", ".git", NULL };
	static const char *const v_max[] = { "9223372036854775807", "2", NULL };

	make_model(root, "flat", NULL, "{\"max_batch_size\": 4}");
	make_model(root, "bare", NULL, NULL);
	make_model(root, "multi", v_multi, NULL);
	make_model(root, "max", v_max, NULL);
	make_dir(root, ".hidden");
	test_write_file(root, "README", "not a model\n", 12);
	test_write_file(root, "multi/notes.txt", "a file beside the versions\n", 27);
}

/* Policies: latest N (fewer and more than there are), all, specific (unordered, repeated). */
static void
build_policies(const char *root)
{
	make_policy(root, "p-latest2", "{\"latest\": {\"num_versions\": 2}}");
	make_policy(root, "p-latest9", "{\"latest\": {\"num_versions\": 9}}");
	make_policy(root, "p-all", "{\"all\": {}}");
	make_policy(root, "p-specific", "{\"specific\": {\"versions\": [5, 1, 5]}}");
	make_model(root, "p-flat-all", NULL, "{\"version_policy\": {\"all\": {}}}");
}

/* Misnamed version directories and bad policies. */
static void
build_errors(const char *root)
{
	static const char *const names[][2] = {
		{ "e-v2", "v2" }, { "e-neg", "-1" }, { "e-zero", "0" }, { "e-lead", "01" }, { "e-plus", "+3" },
		{ "e-over", "9223372036854775808" }, { "e-huge", "123456789012345678901234567890" },
	};
	size_t i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		make_model(root, names[i][0], (const char *const[]){ "1", names[i][1], NULL }, NULL);
	make_policy(root, "b-unknown", "{\"newest\": {}}");
	make_policy(root, "b-two", "{\"all\": {}, \"latest\": {\"num_versions\": 1}}");
	make_policy(root, "b-notobj", "\"latest\"");
	make_policy(root, "b-latest0", "{\"latest\": {\"num_versions\": 0}}");
	make_policy(root, "b-latestnone", "{\"latest\": {}}");
	make_policy(root, "b-lateststr", "{\"latest\": {\"num_versions\": \"2\"}}");
	make_policy(root, "b-allarg", "{\"all\": {\"x\": 1}}");
	make_policy(root, "b-specempty", "{\"specific\": {\"versions\": []}}");
	make_policy(root, "b-specmissing", "{\"specific\": {\"versions\": [1, 7]}}");
	make_policy(root, "b-specneg", "{\"specific\": {\"versions\": [-1]}}");
	make_policy(root, "b-specstr", "{\"specific\": {\"versions\": [\"1\"]}}");
	make_model(root, "b-json", (const char *const[]){ "1", NULL }, "{\"version_policy\": ");
	make_model(root, "b-array", (const char *const[]){ "1", NULL }, "[]");
}

/* Check every entry the trees above make. */
static void
check_scan(const struct repository_entry *e, size_t n)
{
	size_t i;

	CHECK(n == 29, "%zu entries, want 29 (hidden directories and files are not models)", n);
	for (i = 1; i < n; i++)
		CHECK(strcmp(e[i - 1].name, e[i].name) < 0, "entries not sorted: %s before %s", e[i - 1].name, e[i].name);
	CHECK(find(e, n, ".hidden") == NULL && find(e, n, "README") == NULL, "hidden entry or file listed");
	expect_versions(e, n, "flat", (const int64_t[]){ 1 }, 1);
	expect_versions(e, n, "bare", (const int64_t[]){ 1 }, 1);
	expect_versions(e, n, "multi", (const int64_t[]){ 10 }, 1);
	expect_versions(e, n, "max", (const int64_t[]){ INT64_MAX }, 1);
	expect_versions(e, n, "p-latest2", (const int64_t[]){ 2, 5 }, 2);
	expect_versions(e, n, "p-latest9", (const int64_t[]){ 1, 2, 5 }, 3);
	expect_versions(e, n, "p-all", (const int64_t[]){ 1, 2, 5 }, 3);
	expect_versions(e, n, "p-specific", (const int64_t[]){ 1, 5 }, 2);
	expect_versions(e, n, "p-flat-all", (const int64_t[]){ 1 }, 1);
	expect_error(e, n, "e-v2", (const char *const[]){ "e-v2/v2", "must be a version", NULL });
	expect_error(e, n, "e-neg", (const char *const[]){ "e-neg/-1", NULL });
	expect_error(e, n, "e-zero", (const char *const[]){ "e-zero/0", "positive", NULL });
	expect_error(e, n, "e-lead", (const char *const[]){ "e-lead/01", "leading zero", NULL });
	expect_error(e, n, "e-plus", (const char *const[]){ "e-plus/+3", NULL });
	expect_error(e, n, "e-over", (const char *const[]){ "e-over/9223372036854775808", "9223372036854775807", NULL });
	expect_error(e, n, "e-huge", (const char *const[]){ "e-huge/123456789012345678901234567890", NULL });
	expect_error(e, n, "b-unknown", (const char *const[]){ "b-unknown/model.json", "unknown policy \"newest\"", NULL });
	expect_error(e, n, "b-two", (const char *const[]){ "one key", NULL });
	expect_error(e, n, "b-notobj", (const char *const[]){ "\"version_policy\" must be an object", NULL });
	expect_error(e, n, "b-latest0", (const char *const[]){ "num_versions", "[1, ", NULL });
	expect_error(e, n, "b-latestnone", (const char *const[]){ "num_versions", NULL });
	expect_error(e, n, "b-lateststr", (const char *const[]){ "num_versions", NULL });
	expect_error(e, n, "b-allarg", (const char *const[]){ "\"all\" must be {}", NULL });
	expect_error(e, n, "b-specempty", (const char *const[]){ "at least one version", NULL });
	expect_error(e, n, "b-specmissing", (const char *const[]){ "version 7 has no version directory", NULL });
	expect_error(e, n, "b-specneg", (const char *const[]){ "versions[0] must be a positive integer", NULL });
	expect_error(e, n, "b-specstr", (const char *const[]){ "versions[0]", NULL });
	expect_error(e, n, "b-json", (const char *const[]){ "b-json/model.json: line 1", NULL });
	expect_error(e, n, "b-array", (const char *const[]){ "b-array/model.json: not a JSON object", NULL });
}

/* repository_scan_model and its override; names that are not plain directory names. */
static void
check_scan_model(const char *root)
{
	struct repository_entry e;
	char *cause = NULL;

	CHECK(repository_scan_model(root, "multi", &e, &cause) == 0 && e.error == NULL && e.nversions == 1 &&
	    e.versions[0] == 10 && strcmp(e.name, "multi") == 0 && strstr(e.dir, "/multi") != NULL, "scan multi");
	repository_entry_free(&e);
	CHECK(repository_scan_model_config(root, "multi", "{\"version_policy\": {\"all\": {}}}", &e, &cause) == 0 &&
	    e.error == NULL && e.nversions == 3 && e.versions[0] == 1 && e.versions[1] == 3 && e.versions[2] == 10,
	    "override policy all");
	repository_entry_free(&e);
	CHECK(repository_scan_model_config(root, "p-all", "{\"version_policy\": {\"latest\": {\"num_versions\": 1}}}",
	    &e, &cause) == 0 && e.error == NULL && e.nversions == 1 && e.versions[0] == 5, "override replaces all");
	repository_entry_free(&e);
	CHECK(repository_scan_model_config(root, "multi", "{\"version_policy\": ", &e, &cause) == 0 &&
	    e.error != NULL && strstr(e.error, "config override: line 1") != NULL, "bad override: %s", e.error);
	repository_entry_free(&e);
	CHECK(repository_scan_model(root, "e-v2", &e, &cause) == 0 && e.error != NULL, "bad model directory");
	repository_entry_free(&e);
	CHECK(repository_scan_model(root, "absent", &e, &cause) != 0 && strstr(cause, "no model directory 'absent'"),
	    "missing model: %s", cause);
	CHECK(repository_scan_model(root, "../x", &e, &cause) != 0 && strstr(cause, "not a model directory name"),
	    "path escape: %s", cause);
	CHECK(repository_scan_model(root, ".hidden", &e, &cause) != 0, "hidden model accepted");
	CHECK(repository_scan_model(root, "", &e, &cause) != 0, "empty name accepted");
	CHECK(repository_scan_model(root, "README", &e, &cause) != 0, "a plain file accepted as a model");
	free(cause);
}

/* repository_parse_version on its own. */
static void
check_parse_version(void)
{
	int64_t v = 0;

	CHECK(repository_parse_version("1", &v) == 0 && v == 1, "1");
	CHECK(repository_parse_version("42", &v) == 0 && v == 42, "42");
	CHECK(repository_parse_version("9223372036854775807", &v) == 0 && v == INT64_MAX, "INT64_MAX");
	CHECK(repository_parse_version("9223372036854775808", &v) != 0, "INT64_MAX + 1 accepted");
	CHECK(repository_parse_version("0", &v) != 0 && repository_parse_version("", &v) != 0 &&
	    repository_parse_version("07", &v) != 0 && repository_parse_version("1 ", &v) != 0 &&
	    repository_parse_version("-3", &v) != 0 && repository_parse_version("3x", &v) != 0, "bad names accepted");
}

/* Seconds and microseconds as the settling checks take them. */
#define SEC_US 1000000ull
#define SEC_NS 1000000000ll

/* One settling check of (dir, version) with files f at monotonic now_us and wall-clock now_ns. */
static int
settle_at(struct repository_settling *s, const char *dir, int64_t version, const struct repository_files *f,
    uint64_t now_us, int64_t now_ns)
{
	return repository_settling_check(s, dir, version, f, 2 * SEC_US, now_us, now_ns);
}

/* Files still being written wait; files left alone for the interval load; the log's "first" once per episode. */
static void
check_settling_quiet(void)
{
	struct repository_settling s = { 0 };
	struct repository_files f = { 1, 100, 1000 * SEC_NS }, g = f;
	int64_t t0 = 1000 * SEC_NS;

	repository_settling_begin(&s);
	CHECK(settle_at(&s, "/r/m", 1, &f, 10 * SEC_US, t0 + SEC_NS / 2) == 2, "a fresh change did not wait as new");
	/* Due when the files have been quiet for 2 s: 1.5 s from now. */
	CHECK(repository_settling_end(&s) == 10 * SEC_US + 3 * SEC_US / 2, "due %llu", (unsigned long long)s.due_us);
	repository_settling_begin(&s);
	CHECK(settle_at(&s, "/r/m", 1, &f, 11 * SEC_US, t0 + 3 * SEC_NS / 2) == 0, "a waiting version logged again");
	repository_settling_end(&s);
	/* Written again: still the same wait (no second log line), the clock starts over. */
	g.signature = 2;
	g.bytes = 200;
	g.newest_ns = t0 + 17 * SEC_NS / 10;
	repository_settling_begin(&s);
	CHECK(settle_at(&s, "/r/m", 1, &g, 11 * SEC_US + SEC_US / 5, t0 + 17 * SEC_NS / 10) == 0, "growing file");
	CHECK(repository_settling_end(&s) == 13 * SEC_US + SEC_US / 5, "due after the new change");
	repository_settling_begin(&s);
	CHECK(settle_at(&s, "/r/m", 1, &g, 13 * SEC_US, t0 + 37 * SEC_NS / 10 - 1) == 0, "ready before 2 s of quiet");
	repository_settling_end(&s);
	repository_settling_begin(&s);
	CHECK(settle_at(&s, "/r/m", 1, &g, 13 * SEC_US + SEC_US / 10, t0 + 37 * SEC_NS / 10) == 1,
	    "2 s of quiet did not settle");
	CHECK(s.n == 0 && repository_settling_end(&s) == 0, "a settled version is still waiting");
	/* A change long ago (a directory moved into place) loads at once. */
	repository_settling_begin(&s);
	CHECK(settle_at(&s, "/r/m", 2, &f, 20 * SEC_US, t0 + 60 * SEC_NS) == 1, "old files waited");
	CHECK(repository_settling_end(&s) == 0 && s.n == 0, "old files left an entry");
	repository_settling_free(&s);
}

/* Clocks that disagree (times in the future): the same signature seen for the interval settles. */
static void
check_settling_skew(void)
{
	struct repository_settling s = { 0 };
	struct repository_files f = { 7, 100, 5000 * SEC_NS };
	int64_t now = 1000 * SEC_NS;

	repository_settling_begin(&s);
	CHECK(settle_at(&s, "/r/m", 1, &f, 50 * SEC_US, now) == 2, "future times: first look");
	CHECK(repository_settling_end(&s) == 52 * SEC_US, "future times: due by observation");
	repository_settling_begin(&s);
	CHECK(settle_at(&s, "/r/m", 1, &f, 51 * SEC_US, now + SEC_NS) == 0, "future times: settled early");
	repository_settling_end(&s);
	repository_settling_begin(&s);
	CHECK(settle_at(&s, "/r/m", 1, &f, 52 * SEC_US, now + 2 * SEC_NS) == 1, "future times never settle");
	repository_settling_end(&s);
	repository_settling_free(&s);
}

/* Versions a rescan does not look at are forgotten; versions are told apart; 0 s waits for nothing. */
static void
check_settling_rounds(void)
{
	struct repository_settling s = { 0 };
	struct repository_files f = { 3, 10, 100 * SEC_NS };

	repository_settling_begin(&s);
	CHECK(settle_at(&s, "/r/a", 1, &f, SEC_US, 100 * SEC_NS) == 2, "a/1");
	CHECK(settle_at(&s, "/r/a", 2, &f, SEC_US, 100 * SEC_NS) == 2, "a/2 is not a/1");
	CHECK(settle_at(&s, "/r/b", 1, &f, SEC_US, 100 * SEC_NS) == 2, "b/1 is not a/1");
	CHECK(repository_settling_end(&s) == 3 * SEC_US && s.n == 3, "three waiting");
	repository_settling_begin(&s);
	CHECK(settle_at(&s, "/r/b", 1, &f, 2 * SEC_US, 101 * SEC_NS) == 0, "b/1 again");
	CHECK(repository_settling_end(&s) == 3 * SEC_US && s.n == 1, "the versions not looked at stayed");
	repository_settling_begin(&s);
	CHECK(settle_at(&s, "/r/a", 1, &f, 2 * SEC_US, 101 * SEC_NS) == 2, "a forgotten version is not new again");
	repository_settling_end(&s);
	CHECK(repository_settling_check(&s, "/r/c", 1, &f, 0, 2 * SEC_US, 100 * SEC_NS) == 1, "0 s waited");
	repository_settling_free(&s);
	CHECK(s.n == 0 && s.v == NULL, "free left entries");
}

/* A version's files: the signature follows names, sizes and times; the newest time the directory's too. */
static void
check_scan_files(const char *root)
{
	struct repository_files a, b, c, d;
	struct stat st;
	char *dir, *vdir;

	make_model(root, "files", (const char *const[]){ "1", NULL }, "{}");
	if (asprintf(&dir, "%s/files", root) == -1 || asprintf(&vdir, "%s/files/1", root) == -1)
		exit(1);
	test_write_file(vdir, "model.onnx", "0123456789", 10);
	repository_scan_files(dir, 1, &a);
	repository_scan_files(dir, 1, &b);
	CHECK(a.signature == b.signature && a.bytes == 12 && b.bytes == 12, "unstable signature or size %llu",
	    (unsigned long long)a.bytes);
	CHECK(stat(vdir, &st) == 0 && a.newest_ns >= (int64_t)st.st_mtim.tv_sec * SEC_NS + st.st_mtim.tv_nsec,
	    "the newest time is older than the version directory's");
	test_write_file(vdir, "model.onnx", "0123456789a", 11);
	repository_scan_files(dir, 1, &c);
	CHECK(c.signature != a.signature && c.bytes == 13, "a grown file kept the signature");
	test_write_file(vdir, "weights.bin", "", 0);
	repository_scan_files(dir, 1, &d);
	CHECK(d.signature != c.signature && d.bytes == 13, "an added file kept the signature");
	repository_scan_files(dir, 2, &d);	/* no such version: the flat layout's files */
	CHECK(d.bytes == 2, "version 2 read other files (%llu bytes)", (unsigned long long)d.bytes);
	free(dir);
	free(vdir);
}

int
main(void)
{
	struct repository_entry *e = NULL;
	char *root = test_mkdtemp(), *cause = NULL;
	size_t n = 0;

	build_layouts(root);
	build_policies(root);
	build_errors(root);
	CHECK(repository_scan(root, &e, &n, &cause) == 0, "%s", cause);
	check_scan(e, n);
	repository_scan_free(e, n);
	check_scan_model(root);
	check_parse_version();
	check_settling_quiet();
	check_settling_skew();
	check_settling_rounds();
	check_scan_files(root);
	CHECK(repository_scan("/nonexistent/inferd-repo", &e, &n, &cause) != 0 &&
	    strstr(cause, "/nonexistent/inferd-repo") != NULL, "missing repository accepted");
	free(cause);
	test_rmtree(root);
	free(root);
	return test_finish("test_repository_scan");
}
