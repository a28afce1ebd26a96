"""The kernel-name classifier and the per-step split of categories.py (run by ctest)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import categories as cat  # noqa: E402
import record  # noqa: E402


class ClassifyTest(unittest.TestCase):
    # Kernel names as torch.profiler shows them on A100 / H100 runs.
    CASES = {
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)": "communication",
        "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWork*)": "communication",
        "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>":
            "attention",
        "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128>>": "attention",
        "fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel)": "attention",
        "cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x128_4x1x1_kernel0_0": "attention",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1": "gemm",
        "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NTN": "gemm",
        "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn": "gemm",
        "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>": "gemm",
        "void splitKreduce_kernel<32, 16, int, float, __nv_bfloat16>": "gemm",
        "triton_tem_fused_addmm_0": "gemm",
        "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4>": "gemm",
        "triton_poi_fused_add_mul_0": "memory_bound",
        "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1": "memory_bound",
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>":
            "memory_bound",
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>": "memory_bound",
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>":
            "memory_bound",
        "void at::native::multi_tensor_apply_kernel<at::native::FusedAdamMathFunctor>": "memory_bound",
        "Memcpy DtoD (Device -> Device)": "memory_bound",
    }

    def test_each_kernel_goes_to_its_category(self):
        for name, want in self.CASES.items():
            self.assertEqual(cat.classify(name), want, name)

    def test_every_category_but_idle_is_reachable(self):
        self.assertEqual(set(self.CASES.values()), set(cat.CATEGORIES) - {"idle"})


class SplitTest(unittest.TestCase):
    def test_categories_sum_durations_and_idle_is_the_uncovered_window(self):
        kernels = [("gemm_a", 0.000, 0.004), ("flash_fwd_kernel", 0.004, 0.002), ("elementwise", 0.007, 0.001),
                   ("ncclDevKernel_AllReduce", 0.005, 0.003)]  # the collective overlaps the others
        s = cat.split(kernels, window_s=0.012, steps=1)
        self.assertAlmostEqual(s["gemm"], 0.004)
        self.assertAlmostEqual(s["attention"], 0.002)
        self.assertAlmostEqual(s["memory_bound"], 0.001)
        self.assertAlmostEqual(s["communication"], 0.003)
        self.assertAlmostEqual(s["idle"], 0.012 - 0.008)  # busy union: 0 .. 8 ms
        two = cat.split(kernels, window_s=0.012, steps=2)
        self.assertAlmostEqual(two["gemm"], 0.002)
        with self.assertRaises(ValueError):
            cat.split(kernels, window_s=0, steps=1)

    def test_the_record_carries_the_split_as_secondary_metrics(self):
        split = {"gemm": 0.2, "attention": 0.03, "memory_bound": 0.05, "communication": 0.0, "idle": 0.02}
        entries = cat.secondary_entries(split)
        self.assertEqual([e["metric"] for e in entries],
                         ["gemm_time_s", "attention_time_s", "memory_bound_time_s", "communication_time_s",
                          "idle_time_s"])
        self.assertTrue(all(e["unit"] == "s" for e in entries))
        import json
        with open(os.path.join(record_root(), "model", "catalog", "models.json")) as f:
            model = next(m for m in json.load(f)["models"] if m["name"] == "gpt2")
        r = record.make_record(model=model, params=124e6, gpu_name="NVIDIA H100 80GB HBM3", gpus=1, gpus_per_node=1,
                               nodes=1, intra_node=None, strategy="ddp", recompute="none", precision="bf16_mixed",
                               micro_batch=8, grad_accum=1, seq_len=1024, step_times_s=[0.1], peak_memory_bytes=1e9,
                               machine="t", torch_version="2.x", nccl_version="2.x", run_tag="t",
                               categories=split, kernels="compiled", lora_rank=16)
        metrics = [e["metric"] for e in r["measured"]["secondary"]]
        self.assertIn("gemm_time_s", metrics)
        self.assertIn("torch_compile", r["strategy"]["extras"])
        self.assertIn("lora_r16_q_v", r["strategy"]["extras"])
        self.assertIn("-compiled-lora16-", r["id"])


class TraceTest(unittest.TestCase):
    """Only the GPU's own work counts: torch.profiler's trace also draws record_function ranges
    (gpu_user_annotation) and waits (cuda_sync) on the GPU's rows."""
    TRACE = {"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NTN", "ts": 1000, "dur": 400},
        {"ph": "X", "cat": "kernel", "name": "cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x128", "ts": 1400,
         "dur": 100},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "ts": 1500, "dur": 50},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "ts": 1550, "dur": 50},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "DistributedDataParallel.forward", "ts": 999, "dur": 700},
        {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "ts": 1600, "dur": 300},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 990, "dur": 20},
        {"ph": "i", "cat": "kernel", "name": "instant", "ts": 1000},
    ]}

    def test_annotation_and_sync_ranges_are_not_kernels(self):
        kernels = cat.kernels_from_trace(self.TRACE)
        self.assertEqual([k[0][:6] for k in kernels], ["nvjet_", "cudnn_", "Memcpy"])
        self.assertAlmostEqual(kernels[0][1], 1000e-6)
        self.assertAlmostEqual(kernels[0][2], 400e-6)
        split = cat.split(kernels, window_s=1000e-6)
        self.assertAlmostEqual(split["memory_bound"], 50e-6)
        self.assertAlmostEqual(split["idle"], 450e-6)

    def test_the_attention_kernel_is_the_one_that_ran_longest(self):
        self.assertEqual(cat.attention_kernel(cat.kernels_from_trace(self.TRACE)), "cudnn")
        flash = [("void flash_fwd_kernel<Flash_fwd_kernel_traits<64>>", 0, 2e-3),
                 ("fmha_cutlassF_bf16_aligned_64x128_rf_sm80", 0, 1e-3),
                 ("void flash::FlashAttnBwdSm90<...>", 0, 1e-4)]
        self.assertEqual(cat.attention_kernel(flash), "flash2")
        self.assertEqual(cat.attention_kernel(flash[1:]), "mem_efficient")
        self.assertEqual(cat.attention_kernel(flash[2:]), "flash3")
        self.assertIsNone(cat.attention_kernel([("nvjet_tst", 0, 1.0)]))

    def test_top_kernels_are_per_step_and_longest_first(self):
        kernels = [("a_gemm", 0, 1.0), ("b_add", 0, 3.0), ("a_gemm", 0, 1.0)]
        top = cat.top_kernels(kernels, steps=2, count=1)
        self.assertEqual(top, [{"name": "b_add", "category": "memory_bound", "calls": 0.5, "time_s": 1.5}])


def record_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


if __name__ == "__main__":
    unittest.main()
