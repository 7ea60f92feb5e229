"""What each request carries: the image cap, passive bundles, and compaction."""

from __future__ import annotations

import base64

import pytest
from PIL import Image

from vabench.agents.chat.harness_config import HarnessConfig
from vabench.agents.chat.history import ASSISTANT, USER, Conversation, Encoder, ImageRef


def data_url_bytes(part: dict) -> bytes:
    return base64.b64decode(part["image_url"]["url"].split(",", 1)[1])


@pytest.fixture
def frame(tmp_path):
    def make(name: str) -> ImageRef:
        path = tmp_path / f"{name}.png"
        Image.new("RGB", (64, 48), (len(name) * 9 % 255, 10, 10)).save(path)
        return ImageRef(path, name, 64, 48)

    return make


def images_and_stubs(messages):
    sent, stubs = [], []
    for m in messages:
        if isinstance(m["content"], list):
            for p in m["content"]:
                if p["type"] == "image_url":
                    sent.append(p)
                elif p["text"].startswith("[image omitted"):
                    stubs.append(p["text"])
    return sent, stubs


def test_active_requests_keep_the_newest_images_up_to_the_cap(frame):
    conv = Conversation("sys", limits=HarnessConfig(max_images=3))
    for step in range(5):
        conv.add(USER, f"obs {step}", "observation", step, [frame(f"s{step}")])
        conv.add(ASSISTANT, "{}", "reply", step)
    messages, info = conv.request()
    sent, stubs = images_and_stubs(messages)
    assert [s.rsplit("/", 1)[1] for s in info["images"]] == ["s2.png", "s3.png", "s4.png"]
    assert stubs == ["[image omitted: s0]", "[image omitted: s1]"] and info["omitted_images"] == 2
    assert data_url_bytes(sent[-1]) == (frame("s4").path).read_bytes()


def test_passive_requests_carry_only_the_current_bundle_and_new_tool_images(frame):
    conv = Conversation("sys", passive=True, limits=HarnessConfig(max_images=4))
    for step in range(3):
        conv.add(USER, f"obs {step}", "observation", step, [frame(f"s{step}v{v}") for v in range(5)])
        conv.add(ASSISTANT, "{}", "reply", step)
    _, info = conv.request()
    assert len(info["images"]) == 5 and all("s2v" in p for p in info["images"]) and info["omitted_images"] == 10
    conv.add(USER, "history image", "tool", 2, [frame("s0v1")])
    _, info = conv.request()
    assert len(info["images"]) == 6 and info["images"][-1].endswith("s0v1.png")


def test_the_newest_image_turn_is_never_cut_by_the_cap(frame):
    conv = Conversation("sys", limits=HarnessConfig(max_images=2))
    conv.add(USER, "obs", "observation", 0, [frame("obs")])
    conv.add(USER, "eight demo frames", "tool", 0, [frame(f"demo{i}") for i in range(8)])
    _, info = conv.request()
    assert len(info["images"]) == 9  # all eight frames plus the current observation


def test_media_type_comes_from_the_frame_bytes(tmp_path):
    Image.new("RGB", (32, 24)).save(tmp_path / "a.jpg", "JPEG", quality=90)
    Image.new("RGB", (32, 24)).save(tmp_path / "b.png")
    enc = Encoder()
    jpeg = enc.part(ImageRef(tmp_path / "a.jpg", "a", 32, 24))
    png = enc.part(ImageRef(tmp_path / "b.png", "b", 32, 24))
    assert jpeg["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert png["image_url"]["url"].startswith("data:image/png;base64,")
    assert data_url_bytes(jpeg) == (tmp_path / "a.jpg").read_bytes()


def test_compaction_replaces_old_turns_by_the_digest(frame):
    conv = Conversation("sys", limits=HarnessConfig(context_tokens=1500, keep_turns=2, max_images=1))
    calls = []

    def digest(first, last):
        calls.append((first, last))
        return "\n".join(f"step {s}: moved" for s in range(first + 1, last + 1))

    digests = []
    for step in range(8):
        conv.add(USER, f"observation {step} " + "x" * 1200, "observation", step, [frame(f"s{step}")])
        conv.add(ASSISTANT, '{"action": "gripper.open"}', "reply", step)
        digests.append(conv.compact_if_needed(digest, "Compacted steps {first}..{last}:"))
    assert conv.compactions >= 2 and conv.estimate() <= 1500 and sum(d is not None for d in digests) >= 2
    roles = [m["role"] for m in conv.request()[0]]
    assert roles == ["system", "user", "assistant", "user", "assistant"]  # alternation survives
    first = conv.turns[1]
    assert first.text.startswith(f"Compacted steps 0..{calls[-1][1]}:") and calls[-1][0] == 0
    assert "step 5: moved" in first.text and first.text.count("Compacted steps") == 1
    assert first.text.endswith("observation 6 " + "x" * 1200) and first.images[0].label == "s6"
    assert [t.step for t in conv.turns if t.kind == "observation"] == [6, 7]
