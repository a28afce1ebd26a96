"""The probe's records are in the format `stepcast validate` reads (run by ctest)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def catalog_model(name):
    with open(os.path.join(ROOT, "model", "catalog", "models.json")) as f:
        return next(m for m in json.load(f)["models"] if m["name"] == name)


def example(**over):
    args = dict(model=catalog_model("gpt2-xl"), params=1557611200, gpu_name="NVIDIA H100 80GB HBM3", gpus=1,
                gpus_per_node=1, nodes=1, intra_node=None, strategy="fsdp_full_shard", recompute="none",
                precision="bf16_mixed", micro_batch=4, grad_accum=1, seq_len=1024,
                step_times_s=[0.31, 0.30, 0.32], peak_memory_bytes=2.5e10, machine="h100-test",
                torch_version="2.x", nccl_version="2.x", run_tag="t0")
    args.update(over)
    return record.make_record(**args)


def validated(test, records):
    """`stepcast validate --json` of `records` (written to a temporary runs.jsonl): its runs.
    Skips the test where STEPCAST (the stepcast binary) is not set."""
    stepcast = os.environ.get("STEPCAST")
    if not stepcast:
        test.skipTest("STEPCAST not set")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "runs.jsonl")
        with open(path, "w") as f:
            f.writelines(record.dumps(r) + "\n" for r in records)
        out = subprocess.run([stepcast, "validate", path, "--json"], capture_output=True, text=True)
    test.assertEqual(out.returncode, 0, out.stderr)
    return json.loads(out.stdout)["runs"]


class RecordTest(unittest.TestCase):
    def test_the_measured_value_is_the_median_step_time(self):
        r = example()
        self.assertAlmostEqual(r["measured"]["value"], 0.31)
        self.assertEqual(r["batch"]["global_batch"], 4)
        self.assertEqual(list(r.keys()),
                         ["id", "source", "trust", "model", "hardware", "strategy", "batch", "measured", "notes", "raw"])

    def test_unknown_gpus_are_marked_other(self):
        self.assertEqual(record.gpu_key("NVIDIA Mystery"), "other:NVIDIA Mystery")

    def test_stepcast_validate_reads_and_predicts_a_probe_record(self):
        runs = validated(self, [example(), example(strategy="ddp", run_tag="t1")])
        self.assertEqual([r["status"] for r in runs], ["ok", "ok"])
        self.assertGreater(runs[0]["predicted"], 0)

    def test_the_attention_kernel_the_probe_saw_is_the_one_validate_predicts(self):
        self.assertIn("attention_kernel_cudnn", example(attention_kernel="cudnn")["strategy"]["extras"])
        runs = validated(self, [example(attention_kernel=k, run_tag=f"t{i}")
                                for i, k in enumerate(("flash2", "cudnn", "bogus"))])
        self.assertEqual([r["status"].split(":")[0] for r in runs], ["ok", "ok", "skipped"])
        self.assertIn("attention_kernel_bogus", runs[2]["status"])
        self.assertLess(runs[1]["predicted"], runs[0]["predicted"])  # cuDNN's Hopper rates beat FA2's

    def test_stepcast_validate_compares_the_probes_kernel_categories(self):
        stepcast = os.environ.get("STEPCAST")
        if not stepcast:
            self.skipTest("STEPCAST not set")
        split = {"gemm": 0.2, "attention": 0.03, "memory_bound": 0.05, "communication": 0.0, "idle": 0.02}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "runs.jsonl")
            with open(path, "w") as f:
                f.write(record.dumps(example(strategy="ddp", categories=split)) + "\n")
                f.write(record.dumps(example(strategy="ddp", categories=split, kernels="compiled", lora_rank=16,
                                             run_tag="t1")) + "\n")
            out = subprocess.run([stepcast, "validate", path, "--json"], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            runs = json.loads(out.stdout)["runs"]
            self.assertEqual([r["status"] for r in runs], ["ok", "ok"])
            for r in runs:
                self.assertEqual([c["category"] for c in r["categories"]],
                                 ["gemm", "attention", "memory_bound", "communication", "idle"])
            self.assertTrue(any("LoRA rank 16" in a for a in runs[1]["assumptions"]))
            self.assertTrue(any("torch.compile" in a for a in runs[1]["assumptions"]))
            text = subprocess.run([stepcast, "validate", path], capture_output=True, text=True).stdout
            self.assertIn("Step time by kernel category", text)
            # With a calibration file of the same GPU its kernel-model rates are used and named.
            hw = os.path.join(ROOT, "calibrate", "fit", "testdata", "synthetic_kernel_hardware.json")
            out = subprocess.run([stepcast, "validate", path, "--json", "--calibration", hw], capture_output=True,
                                 text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            calibrated = json.loads(out.stdout)["runs"][0]
            self.assertIn("calibration " + hw, calibrated["assumptions"])
            self.assertNotEqual(calibrated["categories"][0]["predicted_s"], runs[0]["categories"][0]["predicted_s"])


if __name__ == "__main__":
    unittest.main()
