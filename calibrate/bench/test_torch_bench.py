"""The pure parts of torch_bench.py (run by ctest, no PyTorch needed): derived figures of
each row, the bytes the kernel model counts per memory-bound op, the timing loop, the merge
into stepcast-calibrate's file, and that rows built here pass check_raw_schema.py."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_raw_schema  # noqa: E402
import torch_bench as tb  # noqa: E402

MACHINE = {"hostname": "t", "date_utc": "2000-01-01T00:00:00Z",
           "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "sm_count": 132, "memory_bytes": 85520809984,
                     "compute_capability": "9.0"}],
           "driver_version": "x", "cuda_runtime_version": "x", "nccl_version": "x", "nvidia_smi_topo": "",
           "nvidia_smi_list": "", "nics": [], "notes": []}


class RowsTest(unittest.TestCase):
    def test_attention_flops_follow_the_flash_attention_convention(self):
        # 4·b·s²·h·d: b 8, s 2048, 16 heads of 128; causal halves it, backward is 2.5x
        full = 4.0 * 8 * 2048 ** 2 * 16 * 128
        self.assertEqual(tb.attention_flops(8, 16, 2048, 128, False, False), full)
        self.assertEqual(tb.attention_flops(8, 16, 2048, 128, True, False), full / 2)
        self.assertEqual(tb.attention_flops(8, 16, 2048, 128, True, True), 2.5 * full / 2)
        row = tb.attention_row(kernel="flash2", backend="sdpa:flash", dtype="bf16", batch=8, heads=16, seq_len=2048,
                               head_dim=128, causal=True, backward=True, iterations=10, time_s=1e-3, check="ok")
        self.assertAlmostEqual(row["tflops"], 2.5 * full / 2 / 1e-3 / 1e12)
        skipped = tb.attention_row(kernel="cudnn", backend="sdpa:cudnn", dtype="bf16", batch=1, heads=16,
                                   seq_len=16384, head_dim=128, causal=True, backward=False, iterations=5,
                                   time_s=0.0, check="skipped: no kernel")
        self.assertIsNone(skipped["tflops"])
        self.assertEqual(skipped["iterations"], 0)

    def test_memory_bytes_are_the_kernel_models(self):
        n, w = 1000, 2
        self.assertEqual(tb.memory_bytes("copy", "eager", n, w), 4 * n)
        self.assertEqual(tb.memory_bytes("add", "compiled", n, w), 6 * n)
        # eager RMSNorm (28 + 4w) per element, fused or compiled 2w (model/kernels.cpp norm_bytes)
        self.assertEqual(tb.memory_bytes("rmsnorm", "eager", n, w), 36 * n)
        self.assertEqual(tb.memory_bytes("rmsnorm", "compiled", n, w), 4 * n)
        # loss forward + backward: eager (12 + w) + (20 + w), compiled 2w + 2w (loss_memory_work)
        self.assertEqual(tb.memory_bytes("cross_entropy", "eager", n, w), 36 * n)
        self.assertEqual(tb.memory_bytes("cross_entropy", "compiled", n, w), 8 * n)
        self.assertEqual(tb.memory_bytes("adamw", "eager", n, 4), 28 * n)
        with self.assertRaises(ValueError):
            tb.memory_bytes("gelu", "eager", n, w)

    def test_plans_cover_every_op_both_profiles_and_both_causal_flags(self):
        for quick in (True, False):
            plan = tb.memory_plan(quick)
            self.assertEqual({(op, p) for op, p, _, _ in plan},
                             {(op, p) for op in tb.MEMORY_OPS for p in ("eager", "compiled")})
            att = tb.attention_plan(quick)
            self.assertEqual({c for _, _, c in att}, {True, False})
        self.assertGreater(len(tb.attention_plan(False)), len(tb.attention_plan(True)))

    def test_gemm_torch_plan_has_every_layer_shape_and_the_squares(self):
        plan = tb.gemm_torch_plan(quick=False)
        self.assertEqual({name for name, *_ in plan}, {"qkv", "attn_out", "mlp_up", "mlp_down", "lm_head", "square"})
        self.assertIn(("mlp_down", 8192, 4096, 16384), plan)  # y[m, n] = x[m, k] · Wᵀ, k the ffn width
        self.assertIn(("square", 16384, 16384, 16384), plan)
        row = tb.gemm_torch_row(name="square", library="torch.matmul", dtype="bf16", m=4096, n=4096, k=4096,
                                iterations=5, times_s=[2e-4, 1e-4, 3e-4], check="ok")
        self.assertEqual(row["time_s_median"], 2e-4)
        self.assertAlmostEqual(row["tflops"], 2 * 4096 ** 3 / 2e-4 / 1e12)

    def test_measure_grows_the_batch_until_it_lasts_the_minimum(self):
        calls = []

        def batch(n):  # 1 ms per call
            calls.append(n)
            return n * 1e-3
        n, per_call = tb.measure(batch, min_s=0.02, repeats=3)
        self.assertGreaterEqual(n * 1e-3, 0.02)
        self.assertAlmostEqual(per_call, 1e-3)
        self.assertEqual(calls[-3:], [n] * 3)

    def test_merge_keeps_the_cuda_launch_rows_and_replaces_its_own(self):
        cuda = tb.launch_row(kind="launch", ops=256, iterations=10, time_s=256 * 4e-6, check="ok")
        old = tb.launch_row(kind="eager_forward_op", ops=100, iterations=10, time_s=1e-3, check="ok")
        new = tb.launch_row(kind="eager_forward_op", ops=120, iterations=10, time_s=1.2e-3, check="ok")
        doc = dict(tb.empty_raw(MACHINE), launch=[cuda, old])
        out = tb.merge(doc, {"launch": [new], "attention": []})
        self.assertEqual(out["launch"], [cuda, new])
        self.assertEqual(out["attention"], [])
        self.assertEqual(doc["launch"], [cuda, old])  # the input is not changed

    def test_rows_built_here_pass_the_raw_schema_check(self):
        doc = tb.empty_raw(MACHINE)
        doc = tb.merge(doc, {
            "launch": [tb.launch_row(kind="eager_backward_op", ops=300, iterations=4, time_s=9e-3, check="ok")],
            "attention": [tb.attention_row(kernel="flash2", backend="flash_attn", dtype="bf16", batch=4, heads=16,
                                           seq_len=4096, head_dim=128, causal=False, backward=False, iterations=3,
                                           time_s=2e-3, check="ok"),
                          tb.attention_row(kernel="cudnn", backend="sdpa:cudnn", dtype="bf16", batch=1, heads=16,
                                           seq_len=16384, head_dim=128, causal=True, backward=True, iterations=0,
                                           time_s=0.0, check="skipped: unsupported")],
            "memory_kernels": [tb.memory_row(op="rmsnorm", profile="eager", dtype="bf16", elements=1 << 24,
                                             elem_bytes=2, iterations=10, time_s=3e-4, check="ok")],
            "gemm_torch": [tb.gemm_torch_row(name="mlp_up", library="torch._scaled_mm", dtype="fp8", m=8192,
                                             n=16384, k=4096, iterations=20, times_s=[1.2e-3, 1.1e-3, 1.3e-3],
                                             check="ok"),
                           tb.gemm_torch_row(name="square", library="torch.matmul", dtype="bf16", m=4096, n=4096,
                                             k=4096, iterations=0, times_s=[0.0], check="skipped: no memory")],
            "overlap": [tb.overlap_row(ranks=8, nbytes=1 << 28, m=8192, n=8192, k=8192, gemm_alone=1.6e-3,
                                       gemm_beside=1.8e-3, coll_alone=2.5e-3, coll_beside=2.6e-3, check="ok")]})
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "raw.json")
            tb.write_raw(path, doc)
            out = io.StringIO()
            with redirect_stdout(out):
                status = check_raw_schema.main(["check", path])
            self.assertEqual(status, 0, out.getvalue())
            self.assertIn("raw schema ok", out.getvalue())
            with open(path) as f:
                self.assertEqual(json.load(f)["format"], "stepcast-calibrate-raw-v1")
            # A wrong derived figure is caught.
            doc["memory_kernels"][0]["GBps"] *= 2
            tb.write_raw(path, doc)
            with redirect_stdout(io.StringIO()):
                self.assertEqual(check_raw_schema.main(["check", path]), 1)


if __name__ == "__main__":
    unittest.main()
