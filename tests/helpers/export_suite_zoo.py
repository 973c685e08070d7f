"""export_suite_zoo.py: the models people serve, as export_suite.py's serving run builds them: torchvision, transformers
(from config objects) and timm constructors with random weights (nothing is downloaded), each wrapped to return a
tuple of tensors, with its inputs at two cases (0: batch 2, 1: batch 1 with other contents, and for text a shorter
sequence), its dynamic axes and whether it is a classifier (top-5 compared).

A spec's build() raises Unavailable when its library is not installed (recorded as "not available")."""
import collections
import zlib

import numpy as np
import torch

Spec = collections.namedtuple("Spec", "name family build inputs input_names output_names dynamic batched classifier")
IMAGE_SIDE = 224
SEQ = (32, 24)  # sequence length of case 0 and case 1
BATCH = (2, 1)  # batch of case 0 and case 1


class Unavailable(Exception):
    """The library a model needs is not installed."""


def _import(name):
    """A library, or Unavailable naming it."""
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise Unavailable(f"{name} is not installed ({e})") from None


class _Tupled(torch.nn.Module):
    """A model whose outputs (tensor, tuple, dict or ModelOutput) are returned as a flat tuple of tensors."""

    def __init__(self, model, keys, kwargs):
        super().__init__()
        self.model, self.keys, self.kwargs = model, keys, kwargs

    def outputs(self, *args):
        """The model's outputs named by keys (indices or names), as a tuple."""
        out = self.model(**dict(zip(self.kwargs, args))) if self.kwargs else self.model(*args)
        if isinstance(out, torch.Tensor):
            return out
        return tuple(out[k] for k in self.keys)


# One forward per arity, with named parameters: the dynamo exporter binds input_names and dynamic_axes to the
# parameters of forward's signature, which *args would not give it.
class _Tupled1(_Tupled):
    """_Tupled of one input."""

    def forward(self, x):
        return self.outputs(x)


class _Tupled2(_Tupled):
    """_Tupled of two inputs."""

    def forward(self, x, y):
        return self.outputs(x, y)


def _wrapped(model, keys, kwargs=None):
    """model in eval mode behind a module returning the outputs named by keys as a tuple."""
    cls = _Tupled2 if kwargs and len(kwargs) == 2 else _Tupled1
    return cls(model, keys, kwargs).eval()


def seed_of(name):
    """A stable seed per model name (weights and inputs do not depend on the order models run in)."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def randomise_zero_weights(model):
    """Give every weight that its constructor left all zero (torchvision's ViT head) random values of scale
    1/sqrt(fan-in): a zero layer answers the same whatever the input, which hides everything before it."""
    g = torch.Generator().manual_seed(4321)
    with torch.no_grad():
        for m in model.modules():
            w = getattr(m, "weight", None)
            if isinstance(w, torch.nn.Parameter) and w.dim() >= 2 and not torch.any(w):
                fan_in = w[0].numel()
                w.copy_(torch.randn(w.shape, generator=g) / fan_in ** 0.5)


def randomise_norms(model, example):
    """Give every BatchNorm random affine parameters, then the running statistics of its own input on example.

    A BatchNorm keeps its default statistics (mean 0, variance 1) in a fresh model, and with them a deep CNN's
    output hardly depends on its input (every image gets the same class); statistics of the data flowing
    through it, as training leaves them, keep the signal alive so that a wrong kernel shows in the output.
    The statistics are set in eval mode by a pre-hook, layer after layer in one pass (each layer sees the
    already calibrated layers before it), which works for detection models whose train mode wants targets.
    """
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
             or type(m).__name__ == "FrozenBatchNorm2d"]
    if not norms:
        return
    g = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for m in norms:
            if getattr(m, "weight", None) is not None:
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.2)

    def calibrate(m, inp):
        """Set m's running statistics to those of its input."""
        x = inp[0].detach()
        dims = [0] + list(range(2, x.dim()))
        m.running_mean.copy_(x.mean(dims))
        m.running_var.copy_(x.var(dims, unbiased=False))

    hooks = [m.register_forward_pre_hook(calibrate) for m in norms]
    try:
        with torch.no_grad():
            model.eval()(*example)
    finally:
        for h in hooks:
            h.remove()


def _images(shape):
    """Input maker of N(0, 1) images of shape (per row); detection models take one image without batch."""
    def make(rng, case):
        return [rng.standard_normal((BATCH[case], *shape)).astype(np.float32)]
    return make


def _single_image(shape):
    """Input maker of one image without a batch dim (torchvision's detection models take a list of images)."""
    def make(rng, case):
        return [rng.standard_normal(shape).astype(np.float32)]
    return make


def _tokens(vocab, names=("input_ids", "attention_mask")):
    """Input maker of token ids (and an attention mask whose second row is padded)."""
    def make(rng, case):
        b, t = BATCH[case], SEQ[case]
        ids = rng.integers(5, vocab, size=(b, t)).astype(np.int64)
        mask = np.ones((b, t), np.int64)
        if b > 1:
            mask[1, t * 2 // 3:] = 0
        return [ids, mask][:len(names)]
    return make


def _audio(frames, dtype=np.float32):
    """Input maker of (batch, frames) audio or (batch, mels, frames) features."""
    def make(rng, case):
        return [(rng.standard_normal((BATCH[case], *frames)) * 0.5).astype(dtype)]
    return make


def _tv(name, family, side=IMAGE_SIDE, keys=None, classifier=True, shape=None, **kw):
    """A torchvision model by constructor name (weights=None)."""
    shape = shape or (3, side, side)

    def build():
        tv = _import("torchvision")
        ns = {"classification": tv.models, "segmentation": tv.models.segmentation,
              "video": tv.models.video}[family]
        return _wrapped(getattr(ns, name)(weights=None, **kw), keys)

    return Spec(name, "torchvision " + family, build, _images(shape), ["input"],
                ["logits"] if keys is None else list(keys), {"input": {0: "batch"}}, True, classifier)


def _tv_detection(name, **kw):
    """A torchvision detection model with its postprocessing: one image in, boxes, scores and labels out."""
    def build():
        tv = _import("torchvision")
        model = getattr(tv.models.detection, name)(weights=None, weights_backbone=None, **kw).eval()

        class Detect(torch.nn.Module):
            """The detections of one image."""

            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, image):
                d = self.model([image])[0]
                return d["boxes"], d["scores"], d["labels"]

        return Detect().eval()

    side = 320
    return Spec(name, "torchvision detection", build, _single_image((3, side, side)), ["image"],
                ["boxes", "scores", "labels"], {}, False, False)


def _hf(name, family, cls, cfg_cls, cfg, inputs, input_names, keys, dynamic=None, classifier=False, part=None):
    """A transformers model from a config object (random weights); part picks a submodule (the encoder)."""
    def build():
        tr = _import("transformers")
        model = getattr(tr, cls)(getattr(tr, cfg_cls)(**cfg))
        if part:
            model = getattr(model, part)()
        return _wrapped(model.eval(), keys, input_names)

    dyn = dynamic or {n: {0: "batch", 1: "seq"} for n in input_names}
    return Spec(name, "transformers " + family, build, inputs, input_names, [str(k) for k in keys], dyn, True,
                classifier)


def _timm(name, arch):
    """A timm model (pretrained=False)."""
    def build():
        timm = _import("timm")
        return _wrapped(timm.create_model(arch, pretrained=False), None)

    return Spec(name, "timm", build, _images((3, IMAGE_SIDE, IMAGE_SIDE)), ["input"], ["logits"],
                {"input": {0: "batch"}}, True, True)


def _yolo():
    """Ultralytics YOLOv8n (its own model YAML, untrained), when ultralytics is installed."""
    def build():
        ul = _import("ultralytics")
        return _wrapped(ul.YOLO("yolov8n.yaml").model.eval(), (0,))

    return Spec("yolov8n", "ultralytics", build, _images((3, 640, 640)), ["images"], ["output0"],
                {"images": {0: "batch"}}, True, False)


# BERT-style text encoders: small but real (4 layers of 256, 4 heads), the real vocabularies.
_TEXT = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)
_VIS = dict(_TEXT, image_size=IMAGE_SIDE)
_KEYS2 = ("last_hidden_state", "pooler_output")
_KEYS1 = ("last_hidden_state",)
_IDS = ["input_ids", "attention_mask"]
_PIX = ["pixel_values"]
_PIXDYN = {"pixel_values": {0: "batch"}}


def specs():
    """Every model of the suite, in the order of the table."""
    img = (3, IMAGE_SIDE, IMAGE_SIDE)
    out = [_tv(n, "classification") for n in ("resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small",
                                               "efficientnet_b0", "convnext_tiny", "regnet_y_400mf", "vit_b_16",
                                               "swin_t", "swin_v2_t")]
    # weights_backbone=None: the segmentation constructors otherwise download ImageNet backbone weights.
    out += [_tv(n, "segmentation", keys=("out",), classifier=False, weights_backbone=None)
            for n in ("deeplabv3_mobilenet_v3_large", "fcn_resnet50", "lraspp_mobilenet_v3_large")]
    out += [_tv_detection("ssdlite320_mobilenet_v3_large"), _tv_detection("fasterrcnn_mobilenet_v3_large_320_fpn")]
    out += [_tv("r3d_18", "video", shape=(3, 8, 112, 112))]
    out += [
        _hf("bert", "text", "BertModel", "BertConfig", _TEXT, _tokens(30522), _IDS, _KEYS2),
        _hf("distilbert", "text", "DistilBertModel", "DistilBertConfig",
            dict(dim=256, n_layers=4, n_heads=4, hidden_dim=1024), _tokens(30522), _IDS, _KEYS1),
        _hf("roberta", "text", "RobertaModel", "RobertaConfig", _TEXT, _tokens(50265), _IDS, _KEYS2),
        _hf("albert", "text", "AlbertModel", "AlbertConfig", dict(_TEXT, embedding_size=128), _tokens(30000),
            _IDS, _KEYS2),
        _hf("electra", "text", "ElectraModel", "ElectraConfig", dict(_TEXT, embedding_size=128), _tokens(30522),
            _IDS, _KEYS1),
        _hf("minilm", "text", "BertModel", "BertConfig",
            dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536),
            _tokens(30522), _IDS, _KEYS2),
        _hf("clip_text", "text", "CLIPTextModel", "CLIPTextConfig", _TEXT, _tokens(49408), _IDS, _KEYS2),
        _hf("gpt2", "text", "GPT2LMHeadModel", "GPT2Config",
            dict(n_embd=256, n_layer=4, n_head=4, n_positions=128, use_cache=False), _tokens(50257), _IDS,
            ("logits",)),
        _hf("t5_encoder", "text", "T5EncoderModel", "T5Config",
            dict(d_model=256, d_kv=64, d_ff=1024, num_layers=4, num_heads=4), _tokens(32128), _IDS, _KEYS1),
        _hf("bart_encoder", "text", "BartModel", "BartConfig",
            dict(d_model=256, encoder_layers=4, decoder_layers=1, encoder_attention_heads=4,
                 decoder_attention_heads=4, encoder_ffn_dim=1024, decoder_ffn_dim=1024),
            _tokens(50265), _IDS, _KEYS1, part="get_encoder"),
        _hf("clip_vision", "vision", "CLIPVisionModel", "CLIPVisionConfig", dict(_VIS, patch_size=32),
            _images(img), _PIX, _KEYS2, _PIXDYN),
        _hf("vit", "vision", "ViTForImageClassification", "ViTConfig", dict(_VIS, num_labels=1000),
            _images(img), _PIX, ("logits",), _PIXDYN, classifier=True),
        _hf("deit", "vision", "DeiTForImageClassification", "DeiTConfig", dict(_VIS, num_labels=1000),
            _images(img), _PIX, ("logits",), _PIXDYN, classifier=True),
        # Whisper's encoder takes exactly 2 x max_source_positions frames of num_mel_bins features.
        _hf("whisper_encoder", "audio", "WhisperModel", "WhisperConfig",
            dict(d_model=256, encoder_layers=4, decoder_layers=1, encoder_attention_heads=4,
                 decoder_attention_heads=4, encoder_ffn_dim=1024, decoder_ffn_dim=1024, num_mel_bins=80,
                 max_source_positions=100), _audio((80, 200)), ["input_features"], _KEYS1,
            {"input_features": {0: "batch"}}, part="get_encoder"),
        _hf("wav2vec2", "audio", "Wav2Vec2Model", "Wav2Vec2Config", _TEXT, _audio((8000,)), ["input_values"],
            _KEYS1, {"input_values": {0: "batch", 1: "samples"}}),
    ]
    out += [_timm("timm_resnet50", "resnet50"), _timm("timm_efficientnet_b0", "efficientnet_b0"),
            _timm("timm_convnext_tiny", "convnext_tiny"), _timm("timm_vit_small", "vit_small_patch16_224")]
    out.append(_yolo())
    return out
