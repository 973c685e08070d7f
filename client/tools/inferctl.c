/* inferctl.c: inferd's command-line client: health, models, model metadata, inference from a file. */
#define _GNU_SOURCE
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "inferctl.h"
#include "inferd.h"

/* What the command line asked for. */
struct ctl_args {
	const char *socket;
	int http;
	struct ctl_http where;
	const char *command;
	const char *name;
	const char *input;		/* a plain --input FILE */
	struct ctl_input named[16];	/* --input NAME=FILE */
	int nnamed;
	const char *config;		/* load/reload --config FILE */
};

/* Print the usage text. */
static void
usage(FILE *f)
{
	fprintf(f, "usage: inferctl [--socket=PATH | --http[=HOST:PORT]] COMMAND\n"
	    "\n"
	    "commands:\n"
	    "  health                      check that the daemon answers\n"
	    "  models                      list the models served\n"
	    "  model NAME                  show a model's inputs, outputs and labels\n"
	    "  infer NAME --input FILE     run FILE (.npy float32, or raw float32) through NAME\n"
	    "  infer NAME --input IN=FILE  (repeated) one .npy file [rows, dims...] per named input;\n"
	    "                              prints every output (shared memory only)\n"
	    "  load NAME [--config FILE]   load (or reload) a model from the repository; FILE: a JSON\n"
	    "                              object whose keys replace the model's model.json keys\n"
	    "  reload NAME [--config FILE] the same (a load of a loaded model reloads it)\n"
	    "  unload NAME                 unload a model\n"
	    "  index                       the repository: every model, version, state and reason\n"
	    "                              (load, reload, unload and index always use HTTP)\n"
	    "\n"
	    "  --socket PATH   the daemon's shared-memory socket (default %s)\n"
	    "  --http[=H:P]    use HTTP instead (default 127.0.0.1:8000; also --http H:P)\n"
	    "  --version       print inferctl's and libinferd's versions\n"
	    "\n"
	    "Every option takes its value as --key=value or --key value.\n"
	    "example: inferctl --socket /tmp/inferd.sock infer fashion-mlp --input docs/examples/image.npy\n",
	    INFERD_DEFAULT_SOCKET);
}

/* Split "HOST:PORT" (or "[V6]:PORT", or "HOST") into where. */
static int
parse_hostport(const char *s, struct ctl_http *w)
{
	const char *colon;
	size_t n;

	snprintf(w->host, sizeof w->host, "127.0.0.1");
	snprintf(w->port, sizeof w->port, "8000");
	if (s == NULL || *s == '\0')
		return 0;
	if (*s == '[') {
		if ((colon = strstr(s, "]")) == NULL)
			return -1;
		n = (size_t)(colon - s - 1);
		colon = colon[1] == ':' ? colon + 1 : NULL;
		s++;
	} else {
		colon = strrchr(s, ':');
		n = colon ? (size_t)(colon - s) : strlen(s);
	}
	if (n >= sizeof w->host || (colon && strlen(colon + 1) >= sizeof w->port))
		return -1;
	if (n > 0) {
		memcpy(w->host, s, n);
		w->host[n] = '\0';
	}
	if (colon != NULL)
		snprintf(w->port, sizeof w->port, "%s", colon + 1);
	return 0;
}

/*
 * If argv[*i] is option name, as --name=VALUE or --name VALUE: *value and 1 (*i moves past a
 * separate value); 0 if it is another option; -1 (reported) when the value is missing.
 */
static int
option_value(int argc, char **argv, int *i, const char *name, const char **value)
{
	const char *s = argv[*i];
	size_t n = strlen(name);

	if (strncmp(s, name, n) != 0 || (s[n] != '\0' && s[n] != '='))
		return 0;
	if (s[n] == '=')
		*value = s + n + 1;
	else if (*i + 1 < argc && argv[*i + 1][0] != '-')
		*value = argv[++*i];
	else {
		fprintf(stderr, "inferctl: %s needs a value (%s=VALUE or %s VALUE)\n", name, name, name);
		return -1;
	}
	return 1;
}

/* --http, --http=H:P or --http H:P (a separate value only when it has a colon, so not a command). */
static int
option_http(int argc, char **argv, int *i, struct ctl_args *a)
{
	const char *s = argv[*i], *addr = NULL;

	if (strcmp(s, "--http") != 0 && strncmp(s, "--http=", 7) != 0)
		return 0;
	if (s[6] == '=')
		addr = s + 7;
	else if (*i + 1 < argc && strchr(argv[*i + 1], ':') != NULL && argv[*i + 1][0] != '-')
		addr = argv[++*i];
	a->http = 1;
	if (parse_hostport(addr, &a->where) != 0) {
		fprintf(stderr, "inferctl: bad --http address '%s'\n", addr);
		return -1;
	}
	return 1;
}

/* Print inferctl's version (the package's) and the libinferd it runs with. */
static void
version(void)
{
	printf("inferctl (%s) %s\nlibinferd %s\n", PACKAGE_NAME, PACKAGE_VERSION, inferd_version());
}

/* Record one --input: NAME=FILE (named; repeatable) or FILE (one input, the old form). */
static int
add_input(struct ctl_args *a, const char *v)
{
	const char *eq = strchr(v, '=');
	char *name;

	if (eq == NULL) {
		if (a->input != NULL || a->nnamed > 0) {
			fprintf(stderr, "inferctl: several inputs need NAME=FILE each\n");
			return -1;
		}
		a->input = v;
		return 0;
	}
	if (a->input != NULL || a->nnamed == 16 || eq == v) {
		fprintf(stderr, "inferctl: --input %s: at most 16 NAME=FILE inputs, not mixed with a plain FILE\n", v);
		return -1;
	}
	if ((name = strndup(v, (size_t)(eq - v))) == NULL) {
		fprintf(stderr, "inferctl: out of memory\n");
		return -1;
	}
	a->named[a->nnamed].name = name;
	a->named[a->nnamed++].path = eq + 1;
	return 0;
}

/* Parse argv; -1 on a usage error (already reported). */
static int
parse_args(int argc, char **argv, struct ctl_args *a)
{
	int i;

	a->socket = INFERD_DEFAULT_SOCKET;
	parse_hostport(NULL, &a->where);
	for (i = 1; i < argc; i++) {
		const char *s = argv[i], *input;
		int r;

		if ((r = option_value(argc, argv, &i, "--socket", &a->socket)) != 0 ||
		    (r = option_http(argc, argv, &i, a)) != 0) {
			if (r < 0)
				return -1;
		} else if ((r = option_value(argc, argv, &i, "--config", &a->config)) != 0) {
			if (r < 0)
				return -1;
		} else if ((r = option_value(argc, argv, &i, "--input", &input)) != 0) {
			if (r < 0 || add_input(a, input) != 0)
				return -1;
		} else if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
			usage(stdout);
			exit(0);
		} else if (strcmp(s, "--version") == 0) {
			version();
			exit(0);
		} else if (s[0] == '-') {
			fprintf(stderr, "inferctl: unknown option '%s'\n", s);
			return -1;
		} else if (a->command == NULL)
			a->command = s;
		else if (a->name == NULL)
			a->name = s;
		else {
			fprintf(stderr, "inferctl: unexpected argument '%s'\n", s);
			return -1;
		}
	}
	if (a->command == NULL) {
		usage(stderr);
		return -1;
	}
	return 0;
}

/* Read a whole file into a malloc'ed buffer. */
static char *
read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL, *grown;
	size_t cap = 0, n;

	*len = 0;
	if (f == NULL) {
		fprintf(stderr, "inferctl: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		if (*len == cap) {
			cap = cap ? cap * 2 : 65536;
			if ((grown = realloc(buf, cap)) == NULL) {
				fprintf(stderr, "inferctl: %s: out of memory\n", path);
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = grown;
		}
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "inferctl: reading %s: %s\n", path, strerror(errno));
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* Find 'key': in a .npy header dict and return what follows the colon. */
static const char *
npy_field(const char *dict, const char *key)
{
	char quoted[32];
	const char *p;

	snprintf(quoted, sizeof quoted, "'%s'", key);
	if ((p = strstr(dict, quoted)) == NULL)
		return NULL;
	p += strlen(quoted);
	while (*p == ' ')
		p++;
	if (*p != ':')
		return NULL;
	p++;
	while (*p == ' ')
		p++;
	return p;
}

/* Product of the .npy shape tuple "(a, b, ...)"; -1 if malformed. */
static long long
npy_shape(const char *p)
{
	long long total = 1, v;
	char *end;

	if (p == NULL || *p != '(')
		return -1;
	for (p++;;) {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == ')')
			return total;
		errno = 0;
		v = strtoll(p, &end, 10);
		if (end == p || errno != 0 || v < 0 || (v > 0 && total > (1LL << 40) / v))
			return -1;
		total *= v;
		p = end;
	}
}

/*
 * Parse a .npy file ourselves; the format is tiny and documented
 * (numpy.lib.format): "\x93NUMPY", major, minor, a little-endian header
 * length (2 bytes in version 1, 4 in 2 and 3), then a Python dict literal
 * with 'descr', 'fortran_order' and 'shape', then the raw data.  Only
 * little-endian float32 in C order is accepted.
 */
static float *
npy_parse(const char *path, const char *buf, size_t len, size_t *count)
{
	size_t hlen, off;
	long long n;
	char *dict;
	const char *descr, *order;
	float *data;

	if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0 || buf[6] < 1 || buf[6] > 3)
		goto bad;
	off = buf[6] == 1 ? 10 : 12;
	if (len < off)
		goto bad;
	hlen = (size_t)(unsigned char)buf[8] | (size_t)(unsigned char)buf[9] << 8;
	if (off == 12)
		hlen |= (size_t)(unsigned char)buf[10] << 16 | (size_t)(unsigned char)buf[11] << 24;
	if (hlen > len - off)
		goto bad;
	if ((dict = strndup(buf + off, hlen)) == NULL)
		goto bad;
	descr = npy_field(dict, "descr");
	order = npy_field(dict, "fortran_order");
	n = npy_shape(npy_field(dict, "shape"));
	if (descr == NULL || (strncmp(descr, "'<f4'", 5) != 0 && strncmp(descr, "'=f4'", 5) != 0) ||
	    order == NULL || strncmp(order, "False", 5) != 0 || n < 0) {
		fprintf(stderr, "inferctl: %s: only little-endian float32 ('<f4') in C order is supported\n", path);
		free(dict);
		return NULL;
	}
	free(dict);
	off += hlen;
	if ((size_t)n * 4 != len - off) {
		fprintf(stderr, "inferctl: %s: the shape says %lld floats but %zu bytes follow the header\n",
		    path, n, len - off);
		return NULL;
	}
	if ((data = malloc((size_t)n * 4 + 1)) == NULL)
		goto bad;
	memcpy(data, buf + off, (size_t)n * 4);
	*count = (size_t)n;
	return data;
bad:
	fprintf(stderr, "inferctl: %s: not a valid .npy file\n", path);
	return NULL;
}

/* Load FILE as .npy (by its magic) or raw float32. */
static float *
load_input(const char *path, size_t *count)
{
	float *data = NULL;
	size_t len;
	char *buf;

	if ((buf = read_file(path, &len)) == NULL)
		return NULL;
	if (len >= 6 && memcmp(buf, "\x93NUMPY", 6) == 0)
		data = npy_parse(path, buf, len, count);
	else if (len == 0 || len % 4 != 0)
		fprintf(stderr, "inferctl: %s: %zu bytes is not a whole number of float32 values\n", path, len);
	else if ((data = malloc(len)) != NULL) {
		memcpy(data, buf, len);
		*count = len / 4;
	}
	free(buf);
	return data;
}

/* Rows in count floats of m's input; -1 (reported) when they do not divide or exceed the batch. */
static int
input_rows(const struct ctl_model *m, size_t count)
{
	size_t max = m->max_batch_size > 0 ? (size_t)m->max_batch_size : (size_t)1 << 30;

	if (m->in_elems == 0 || count % m->in_elems != 0 || count / m->in_elems < 1 ||
	    count / m->in_elems > max) {
		fprintf(stderr, "inferctl: %zu values are not 1 to %zu rows of %zu for %s\n",
		    count, max, m->in_elems, m->name);
		return -1;
	}
	return (int)(count / m->in_elems);
}

/* Connect over shared memory, reporting failures. */
static inferd_conn_t *
shm_connect(const char *path)
{
	inferd_conn_t *c;
	struct inferd_options o = { .size = sizeof o, .region_bytes = 16u << 20 };
	int r;

	if ((r = inferd_connect(path, &o, &c)) != 0) {
		fprintf(stderr, "inferctl: %s: %s\n", inferd_strerror(r), inferd_last_error());
		return NULL;
	}
	return c;
}

/* Copy libinferd's model into inferctl's. */
static int
shm_model(const struct inferd_model *im, struct ctl_model *m)
{
	size_t i;

	memset(m, 0, sizeof *m);
	snprintf(m->name, sizeof m->name, "%s", im->name);
	snprintf(m->input_name, sizeof m->input_name, "%s", im->input_name);
	snprintf(m->output_name, sizeof m->output_name, "%s", im->output_name);
	m->max_batch_size = im->max_batch_size;
	m->in_ndims = im->input_ndims;
	m->out_ndims = im->output_ndims;
	memcpy(m->in_dims, im->input_dims, sizeof m->in_dims);
	memcpy(m->out_dims, im->output_dims, sizeof m->out_dims);
	m->in_elems = im->input_row_bytes / 4;
	m->out_elems = im->output_row_bytes / 4;
	if (im->nlabels > 0 && (m->labels = calloc(im->nlabels, sizeof *m->labels)) == NULL)
		return -1;
	for (i = 0; i < im->nlabels; i++) {
		if ((m->labels[i] = strdup(im->labels[i])) == NULL)
			return -1;
		m->nlabels = i + 1;
	}
	return 0;
}

/* Look a model up over shared memory. */
static int
shm_get_model(inferd_conn_t *c, const char *name, const struct inferd_model **im,
    struct ctl_model *m)
{
	int r;

	if ((r = inferd_model_get(c, name, im)) != 0) {
		fprintf(stderr, "inferctl: %s: %s\n", inferd_strerror(r), inferd_last_error());
		return -1;
	}
	if (shm_model(*im, m) != 0) {
		fprintf(stderr, "inferctl: out of memory\n");
		ctl_model_free(m);
		return -1;
	}
	return 0;
}

/* Run the input through the model in the region and print the result. */
static int
shm_infer(inferd_conn_t *c, const struct inferd_model *im, const struct ctl_model *m,
    const float *in, int rows)
{
	struct inferd_tensor ti, to;
	int r;

	if ((r = inferd_tensor_alloc(c, (size_t)rows * im->input_row_bytes, &ti)) != 0 ||
	    (r = inferd_tensor_alloc(c, (size_t)rows * im->output_row_bytes, &to)) != 0) {
		fprintf(stderr, "inferctl: %s: %s\n", inferd_strerror(r), inferd_last_error());
		return -1;
	}
	memcpy(ti.data, in, (size_t)rows * im->input_row_bytes);
	if ((r = inferd_infer(c, im, rows, &ti, &to, 0)) != 0) {
		fprintf(stderr, "inferctl: %s: %s\n", inferd_strerror(r), inferd_last_error());
		return -1;
	}
	ctl_print_output(m, rows, to.data);
	inferd_tensor_free(c, &ti);
	inferd_tensor_free(c, &to);
	return 0;
}

/* The shared-memory commands. */
static int
run_shm(const struct ctl_args *a, const float *in, size_t count)
{
	const struct inferd_model *im;
	struct ctl_model m = { 0 };
	inferd_conn_t *c;
	unsigned i;
	int r = -1, rows;

	if ((c = shm_connect(a->socket)) == NULL)
		return -1;
	if (strcmp(a->command, "health") == 0) {
		printf("ok: %s serves %u model%s\n", a->socket, inferd_model_count(c),
		    inferd_model_count(c) == 1 ? "" : "s");
		r = 0;
	} else if (strcmp(a->command, "models") == 0) {
		/* The served ones, as over HTTP: a name whose version failed to load or went is left out. */
		for (i = 0, r = 0; i < inferd_model_count(c) && r == 0; i++) {
			if ((r = inferd_model_get_id(c, i, &im)) == 0)
				printf("%s\n", im->name);
			else if (r == INFERD_ENOMODEL)
				r = 0;
			else
				fprintf(stderr, "inferctl: %s: %s\n", inferd_strerror(r), inferd_last_error());
		}
	} else if (shm_get_model(c, a->name, &im, &m) == 0) {
		if (strcmp(a->command, "model") == 0) {
			ctl_print_model_tensors(im);
			r = 0;
		} else if (a->nnamed > 0)
			r = ctl_shm_infer_named(c, im, a->named, a->nnamed);
		else if (im->ninputs != 1 || im->noutputs != 1 || im->input_row_bytes == 0 ||
		    strcmp(im->datatype, "FP32") != 0)
			fprintf(stderr, "inferctl: model %s has %d inputs and %d outputs: give each as "
			    "--input NAME=FILE.npy\n", im->name, im->ninputs, im->noutputs);
		else if ((rows = input_rows(&m, count)) > 0)
			r = shm_infer(c, im, &m, in, rows);
		ctl_model_free(&m);
	}
	inferd_close(c);
	return r;
}

/* The HTTP commands. */
static int
run_http(const struct ctl_args *a, const float *in, size_t count)
{
	struct ctl_model m = { 0 };
	float *out;
	int r = -1, rows;

	if (strcmp(a->command, "health") == 0)
		return ctl_http_health(&a->where);
	if (strcmp(a->command, "models") == 0)
		return ctl_http_models(&a->where);
	if (strcmp(a->command, "model") == 0)
		return ctl_http_print_model(&a->where, a->name);
	if (ctl_http_model(&a->where, a->name, &m) != 0)
		return -1;
	if ((rows = input_rows(&m, count)) > 0) {
		if ((out = calloc((size_t)rows * m.out_elems, sizeof *out)) == NULL)
			fprintf(stderr, "inferctl: out of memory\n");
		else if ((r = ctl_http_infer(&a->where, &m, rows, in, out)) == 0)
			ctl_print_output(&m, rows, out);
		free(out);
	}
	ctl_model_free(&m);
	return r;
}

/* Whether the command is one of the repository API's (HTTP only). */
static int
is_repository_command(const char *c)
{
	return strcmp(c, "load") == 0 || strcmp(c, "reload") == 0 || strcmp(c, "unload") == 0 ||
	    strcmp(c, "index") == 0;
}

/* Read --config FILE and check it is a JSON object; the text, malloc'ed and NUL-terminated, or NULL (reported). */
static char *
read_config(const char *path)
{
	json_error_t err;
	char *buf, *text;
	size_t len;
	json_t *j;

	if ((buf = read_file(path, &len)) == NULL)
		return NULL;
	if ((text = realloc(buf, len + 1)) == NULL) {
		fprintf(stderr, "inferctl: %s: out of memory\n", path);
		free(buf);
		return NULL;
	}
	text[len] = '\0';
	if ((j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err)) == NULL || !json_is_object(j)) {
		if (j == NULL)
			fprintf(stderr, "inferctl: %s: line %d, column %d: %s\n", path, err.line, err.column, err.text);
		else
			fprintf(stderr, "inferctl: %s: the config must be a JSON object\n", path);
		json_decref(j);
		free(text);
		return NULL;
	}
	json_decref(j);
	return text;
}

/* load, reload, unload, index: over HTTP, to --http's address or the default. */
static int
run_repository(const struct ctl_args *a)
{
	char *config = NULL;
	int r;

	if (strcmp(a->command, "index") == 0)
		return ctl_http_index(&a->where);
	if (strcmp(a->command, "unload") == 0)
		return ctl_http_unload(&a->where, a->name);
	if (a->config != NULL && (config = read_config(a->config)) == NULL)
		return -1;
	r = ctl_http_load(&a->where, a->name, config, strcmp(a->command, "reload") == 0 ? "reloaded" : "loaded");
	free(config);
	return r;
}

/* Check that the command and its arguments go together. */
static int
check_command(const struct ctl_args *a)
{
	int needs_name = strcmp(a->command, "model") == 0 || strcmp(a->command, "infer") == 0 ||
	    (is_repository_command(a->command) && strcmp(a->command, "index") != 0);

	if (a->config != NULL && strcmp(a->command, "load") != 0 && strcmp(a->command, "reload") != 0) {
		fprintf(stderr, "inferctl: --config FILE goes with load and reload only\n");
		return -1;
	}
	if (!needs_name && strcmp(a->command, "health") != 0 && strcmp(a->command, "models") != 0 &&
	    strcmp(a->command, "index") != 0) {
		fprintf(stderr, "inferctl: unknown command '%s' (see --help)\n", a->command);
		return -1;
	}
	if (needs_name != (a->name != NULL)) {
		fprintf(stderr, "inferctl: %s %s\n", a->command, needs_name ? "needs a model name" : "takes no argument");
		return -1;
	}
	if ((strcmp(a->command, "infer") == 0) != (a->input != NULL || a->nnamed > 0)) {
		fprintf(stderr, "inferctl: --input FILE goes with infer, and only with it\n");
		return -1;
	}
	if (a->nnamed > 0 && a->http) {
		fprintf(stderr, "inferctl: --input NAME=FILE goes over the shm socket; --http takes one --input FILE\n");
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct ctl_args a = { 0 };
	float *in = NULL;
	size_t count = 0;
	int r;

	if (parse_args(argc, argv, &a) != 0 || check_command(&a) != 0)
		return 2;
	if (a.input != NULL && (in = load_input(a.input, &count)) == NULL)
		return 1;
	if (is_repository_command(a.command))
		r = run_repository(&a);
	else
		r = a.http ? run_http(&a, in, count) : run_shm(&a, in, count);
	free(in);
	for (int i = 0; i < a.nnamed; i++)
		free((char *)a.named[i].name);
	return r == 0 ? 0 : 1;
}
