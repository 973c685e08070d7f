/* model_pbtxt.cc: Triton's config.pbtxt through libprotobuf's TextFormat, turned into model.json's keys. */
#include "config.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include "error.h"
#include "model_pbtxt.h"
#include "model_pbtxt.pb.h"

namespace pb = google::protobuf;
namespace tr = inferd::triton;

namespace {

// The parser's first error, with its position; protobuf's lines and columns count from 0.
class pbtxt_errors : public pb::io::ErrorCollector {
public:
	std::string first;
	void AddError(int line, pb::io::ColumnNumber column, const std::string &message) override
	{
		if (first.empty())
			first = std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
	}
};

// Append v to a (v NULL: out of memory); false when either failed.
bool
pbtxt_push(json_t *a, json_t *v)
{
	return a != NULL && v != NULL && json_array_append_new(a, v) == 0;
}

// Set key of o to v (NULL: out of memory); false when either failed.
bool
pbtxt_set(json_t *o, const char *key, json_t *v)
{
	return o != NULL && v != NULL && json_object_set_new(o, key, v) == 0;
}

// A DataType's KServe name: TYPE_FP32 -> "FP32", TYPE_STRING -> "BYTES".
json_t *
pbtxt_datatype(tr::DataType t)
{
	std::string name = tr::DataType_Name(t);

	if (t == tr::TYPE_STRING)
		return json_string("BYTES");
	return json_string(name.c_str() + 5);	// after "TYPE_"
}

// A dims list as a JSON array.
json_t *
pbtxt_dims(const pb::RepeatedField<int64_t> &dims)
{
	json_t *a = json_array();

	for (int64_t d : dims)
		if (!pbtxt_push(a, json_integer(d)))
			return json_decref(a), nullptr;
	return a;
}

// input -> inputs: name, datatype, dims, format (when not FORMAT_NONE).
json_t *
pbtxt_inputs(const tr::ModelConfig &c)
{
	json_t *a = json_array(), *o;

	for (const tr::ModelInput &in : c.input()) {
		o = json_pack("{s:s, s:o, s:o}", "name", in.name().c_str(), "datatype", pbtxt_datatype(in.data_type()),
		    "dims", pbtxt_dims(in.dims()));
		if (o != NULL && in.format() != tr::ModelInput::FORMAT_NONE &&
		    !pbtxt_set(o, "format", json_string(tr::ModelInput::Format_Name(in.format()).c_str())))
			o = (json_decref(o), nullptr);
		if (!pbtxt_push(a, o))
			return json_decref(a), nullptr;
	}
	return a;
}

// output -> outputs: name, datatype, dims, label_filename (when given).
json_t *
pbtxt_outputs(const tr::ModelConfig &c)
{
	json_t *a = json_array(), *o;

	for (const tr::ModelOutput &out : c.output()) {
		o = json_pack("{s:s, s:o, s:o}", "name", out.name().c_str(), "datatype",
		    pbtxt_datatype(out.data_type()), "dims", pbtxt_dims(out.dims()));
		if (o != NULL && !out.label_filename().empty() &&
		    !pbtxt_set(o, "label_filename", json_string(out.label_filename().c_str())))
			o = (json_decref(o), nullptr);
		if (!pbtxt_push(a, o))
			return json_decref(a), nullptr;
	}
	return a;
}

// dynamic_batching in model.json's names; Triton's 0 ("no limit") leaves inferd's default.
json_t *
pbtxt_batching(const tr::ModelDynamicBatching &b)
{
	json_t *o = json_object(), *pref = json_array();
	const tr::ModelQueuePolicy &q = b.default_queue_policy();

	for (int32_t p : b.preferred_batch_size())
		if (!pbtxt_push(pref, json_integer(p)))
			pref = (json_decref(pref), nullptr);
	if (!pbtxt_set(o, "preferred_batch_sizes", pref))
		return json_decref(o), nullptr;
	if (!pbtxt_set(o, "max_queue_delay_us", json_integer((json_int_t)b.max_queue_delay_microseconds())))
		return json_decref(o), nullptr;
	if (q.max_queue_size() != 0 && !pbtxt_set(o, "max_queue_size", json_integer(q.max_queue_size())))
		return json_decref(o), nullptr;
	if (q.default_timeout_microseconds() != 0 &&
	    !pbtxt_set(o, "default_timeout_us", json_integer((json_int_t)q.default_timeout_microseconds())))
		return json_decref(o), nullptr;
	return o;
}

// One instance_group entry as model.json's {"count", "devices"}; NULL with *cause when not honoured.
json_t *
pbtxt_group(const tr::ModelInstanceGroup &g, int k, const char *file, char **cause)
{
	json_t *o = json_pack("{s:i}", "count", g.count() > 0 ? g.count() : 1), *devs;
	char name[32];

	if (g.kind() == tr::ModelInstanceGroup::KIND_MODEL || (g.kind() != tr::ModelInstanceGroup::KIND_GPU &&
	    g.gpus_size() > 0)) {
		json_decref(o);
		return error_set(cause, "%s: instance_group[%d]: %s is not supported (KIND_GPU with gpus, KIND_CPU or "
		    "KIND_AUTO)", file, k, g.kind() == tr::ModelInstanceGroup::KIND_MODEL ? "kind KIND_MODEL" :
		    "gpus without kind KIND_GPU"), nullptr;
	}
	if (g.count() < 0) {
		json_decref(o);
		return error_set(cause, "%s: instance_group[%d]: count %d is negative", file, k, g.count()), nullptr;
	}
	if (g.kind() == tr::ModelInstanceGroup::KIND_CPU)
		return pbtxt_set(o, "devices", json_pack("[s]", "cpu")) ? o : (json_decref(o), nullptr);
	if (g.gpus_size() == 0)
		return o;
	devs = json_array();
	for (int32_t gpu : g.gpus()) {
		snprintf(name, sizeof name, "cuda:%d", (int)gpu);
		if (!pbtxt_push(devs, json_string(name)))
			devs = (json_decref(devs), nullptr);
	}
	return pbtxt_set(o, "devices", devs) ? o : (json_decref(o), nullptr);
}

// version_policy in the same shape model.json uses.
json_t *
pbtxt_policy(const tr::ModelVersionPolicy &p)
{
	json_t *versions;

	if (p.has_all())
		return json_pack("{s:{}}", "all");
	if (p.has_specific()) {
		versions = json_array();
		for (int64_t v : p.specific().versions())
			if (!pbtxt_push(versions, json_integer(v)))
				versions = (json_decref(versions), nullptr);
		return json_pack("{s:{s:o}}", "specific", "versions", versions);
	}
	return json_pack("{s:{s:I}}", "latest", "num_versions",
	    (json_int_t)(p.has_latest() ? p.latest().num_versions() : 1));
}

// platform / backend: ONNX only.
int
pbtxt_platform(const tr::ModelConfig &c, const char *file, char **cause)
{
	const std::string &p = c.platform(), &b = c.backend();

	if (!p.empty() && p != "onnxruntime_onnx" && p != "onnx")
		return error_set(cause, "%s: platform \"%s\" is not supported: inferd runs ONNX models "
		    "(\"onnxruntime_onnx\")", file, p.c_str());
	if (!b.empty() && b != "onnxruntime" && b != "onnx")
		return error_set(cause, "%s: backend \"%s\" is not supported: inferd runs ONNX models (\"onnxruntime\")",
		    file, b.c_str());
	if (!c.default_model_filename().empty() && c.default_model_filename() != "model.onnx")
		return error_set(cause, "%s: default_model_filename \"%s\" is not supported: inferd loads each version's "
		    "model.onnx (rename the file)", file, c.default_model_filename().c_str());
	return 0;
}

// The optional sections; false when memory ran out or *cause was set.
bool
pbtxt_sections(const tr::ModelConfig &c, json_t *o, const char *file, char **cause)
{
	json_t *groups;
	int k = 0;

	if (c.input_size() > 0 && !pbtxt_set(o, "inputs", pbtxt_inputs(c)))
		return false;
	if (c.output_size() > 0 && !pbtxt_set(o, "outputs", pbtxt_outputs(c)))
		return false;
	if (c.has_dynamic_batching() && !pbtxt_set(o, "dynamic_batching", pbtxt_batching(c.dynamic_batching())))
		return false;
	if (c.has_version_policy() && !pbtxt_set(o, "version_policy", pbtxt_policy(c.version_policy())))
		return false;
	if (c.instance_group_size() == 0)
		return true;
	groups = json_array();
	for (const tr::ModelInstanceGroup &g : c.instance_group())
		if (!pbtxt_push(groups, pbtxt_group(g, k++, file, cause)))
			return json_decref(groups), false;
	return pbtxt_set(o, "instance_group", groups);
}

// A parsed ModelConfig in model.json's keys: platform and max_batch_size always, the rest where set.
int
pbtxt_convert(const tr::ModelConfig &c, const char *file, json_t **out, char **cause)
{
	char *why = nullptr;
	json_t *o;

	if (pbtxt_platform(c, file, cause) != 0)
		return -1;
	o = json_pack("{s:s, s:i}", "platform", "onnx", "max_batch_size", c.max_batch_size());
	if (o != NULL && !c.name().empty() && !pbtxt_set(o, "name", json_string(c.name().c_str())))
		o = (json_decref(o), nullptr);
	if (o == NULL || !pbtxt_sections(c, o, file, &why)) {
		json_decref(o);
		if (why == nullptr)
			return error_set(cause, "%s: out of memory", file);
		error_set(cause, "%s", why);
		free(why);
		return -1;
	}
	*out = o;
	return 0;
}

}	// namespace

// Parse config.pbtxt text into model.json's keys.
extern "C" int
model_pbtxt_parse(const char *text, size_t len, const char *file, json_t **out, char **cause)
{
	tr::ModelConfig c;
	pb::TextFormat::Parser parser;
	pbtxt_errors errors;

	*out = nullptr;
	parser.RecordErrorsTo(&errors);
	if (!parser.ParseFromString(std::string(text, len), &c)) {
		if (errors.first.find("has no field named") != std::string::npos)
			errors.first += " (a ModelConfig field inferd does not honour; see docs/MODELS.md, config.pbtxt)";
		return error_set(cause, "%s:%s", file, errors.first.empty() ? " does not parse" : errors.first.c_str());
	}
	return pbtxt_convert(c, file, out, cause);
}

// Parse ModelConfig JSON (protobuf's JSON mapping: quoted integers, enum names) into model.json's keys.
extern "C" int
model_pbtxt_parse_json(const char *text, size_t len, const char *what, json_t **out, char **cause)
{
	tr::ModelConfig c;
	pb::util::JsonParseOptions options;
	pb::util::Status st;

	*out = nullptr;
	options.ignore_unknown_fields = false;
	st = pb::util::JsonStringToMessage(pb::StringPiece(text, len), &c, options);
	if (!st.ok())
		return error_set(cause, "%s: as Triton's ModelConfig JSON: %s (a field inferd does not honour is "
		    "refused; see docs/MODELS.md, config.pbtxt)", what, std::string(st.message()).c_str());
	return pbtxt_convert(c, what, out, cause);
}
