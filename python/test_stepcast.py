#!/usr/bin/env python3
"""Tests of the Python module `stepcast` (python/stepcast_py.cpp): predict, scale, plan, compare,
need and validate (catalog and init besides), each given a path (str and pathlib.Path) and a dict, return the dict the command's
--json prints; bad input raises stepcast.InputError (a ValueError) naming the file and the
JSON path. Run by ctest (test python_module) with PYTHONPATH=build/python, from the
repository root; STEPCAST names the command, to compare the module with `--json`.
"""
import copy
import json
import os
import pathlib
import subprocess
import unittest

import stepcast

ROOT = pathlib.Path(os.environ.get("STEPCAST_SOURCE_DIR", pathlib.Path(__file__).resolve().parent.parent))
MINIMAL = ROOT / "tests/data/good/minimal.json"  # GPT-2 small, FSDP, one DGX A100 (8 GPUs)
PRICED = ROOT / "tests/data/plan/gpt2-8xh100-priced.json"
RUNS = ROOT / "tests/data/good/runs.jsonl"  # two records: one predicted, one skipped
SEED = ROOT / "scenarios/seeds/gpt2-xl-ddp-8xa100.json"


def load(path):
    return json.loads(pathlib.Path(path).read_text())


def cli_json(*args):
    """`stepcast ARGS --json` parsed, or None when the test runs without the command."""
    command = os.environ.get("STEPCAST")
    if not command:
        return None
    out = subprocess.run([command, *map(str, args), "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


class Predict(unittest.TestCase):
    def test_path_as_str_gives_the_commands_json(self):
        got = stepcast.predict(str(SEED))
        self.assertGreater(got["step_time_s"], 0)
        expected = cli_json("predict", SEED)
        if expected is not None:
            self.assertEqual(got, expected)

    def test_pathlib_path_and_str_agree(self):
        self.assertEqual(stepcast.predict(MINIMAL), stepcast.predict(str(MINIMAL)))

    def test_dict_predicts_as_its_file_but_for_the_file_name(self):
        from_file = stepcast.predict(MINIMAL)
        from_dict = stepcast.predict(load(MINIMAL))
        self.assertEqual(from_dict["file"], "<dict>")
        from_dict["file"] = from_file["file"]
        self.assertEqual(from_dict, from_file)

    def test_gpus_overrides_the_scenarios_count(self):
        got = stepcast.predict(MINIMAL, gpus=4)
        self.assertEqual(got["gpus"], 4)
        self.assertEqual(got, cli_json("predict", MINIMAL, "--gpus", 4) or got)

    def test_absent_figures_are_none(self):
        scenario = load(MINIMAL)
        del scenario["dataset"]
        got = stepcast.predict(scenario)
        self.assertIsNone(got["time_per_epoch_s"])
        self.assertIsNone(got["cost_per_epoch_usd"])


class Scale(unittest.TestCase):
    def test_path_rows_per_count_with_the_commands_json(self):
        got = stepcast.scale(MINIMAL, [1, 8])
        self.assertEqual([r["gpus"] for r in got["rows"]], [1, 8])
        expected = cli_json("scale", MINIMAL, "--gpus", "1,8")
        if expected is not None:
            self.assertEqual(got, expected)

    def test_dict_rows_carry_mfu_tokens_per_gpu_and_cost(self):
        got = stepcast.scale(load(PRICED), [4, 8])
        for row in got["rows"]:
            self.assertAlmostEqual(row["tokens_per_s_per_gpu"], row["tokens_per_s"] / row["gpus"], delta=1e-6 * row["tokens_per_s"])
            self.assertGreater(row["mfu"], 0)
            self.assertGreater(row["usd_per_million_tokens"], 0)


class ScaleFixedBatch(unittest.TestCase):
    def test_fixed_batch_holds_the_global_batch_as_the_command_does(self):
        example = ROOT / "scenarios/examples/llama3-8b-fsdp-16xh100.json"
        got = stepcast.scale(example, [8, 16, 32], fixed_batch=True)
        self.assertTrue(got["global_batch_fixed"])
        self.assertEqual({r["global_batch"] for r in got["rows"]}, {128})
        self.assertEqual([r["grad_accum"] for r in got["rows"]], [16, 8, 4])
        expected = cli_json("scale", example, "--gpus", "8,16,32", "--fixed-batch")
        if expected is not None:
            self.assertEqual(got, expected)
        with self.assertRaisesRegex(ValueError, "does not split over 24"):
            stepcast.scale(example, [24], fixed_batch=True)


class Plan(unittest.TestCase):
    def test_path_ranks_top_layouts(self):
        got = stepcast.plan(MINIMAL, top=2)
        self.assertEqual([r["rank"] for r in got["rows"]], [1, 2])
        self.assertLessEqual(got["rows"][0]["step_time_s"], got["rows"][1]["step_time_s"])
        expected = cli_json("plan", MINIMAL, "--top", 2)
        if expected is not None:
            self.assertEqual(got, expected)

    def test_dict_with_options(self):
        got = stepcast.plan(load(PRICED), objective="cost", global_batch=64, top=1)
        self.assertEqual(got["objective"], "cost")
        self.assertEqual(got["global_batch"], 64)
        self.assertEqual(len(got["rows"]), 1)

    def test_cost_without_price_is_a_value_error(self):
        with self.assertRaisesRegex(ValueError, "price_per_gpu_hour_usd"):
            stepcast.plan(MINIMAL, objective="cost")


A100_PRICED = ROOT / "tests/data/plan/gpt2-8xa100-priced.json"
NEED = ROOT / "scenarios/seeds/rule-of-thumb-10b-4x8a100-100g.json"


class Compare(unittest.TestCase):
    def test_paths_and_dicts_give_the_commands_json(self):
        got = stepcast.compare([A100_PRICED, PRICED])
        self.assertEqual(len(got["rows"]), 2)
        expected = cli_json("compare", A100_PRICED, PRICED)
        if expected is not None:
            self.assertEqual(got, expected)
        mixed = stepcast.compare([load(A100_PRICED), str(PRICED)])
        self.assertEqual(mixed["rows"][1], got["rows"][1])

    def test_one_scenario_is_a_value_error(self):
        with self.assertRaisesRegex(ValueError, "two scenarios or more"):
            stepcast.compare([MINIMAL])


class Need(unittest.TestCase):
    def test_gives_the_commands_json(self):
        got = stepcast.need(NEED, exposed_comm=0.05)
        expected = cli_json("need", NEED, "--exposed-comm", "5%")
        if expected is not None:
            self.assertEqual(got, expected)

    def test_one_node_is_a_value_error(self):
        with self.assertRaises(ValueError):
            stepcast.need(MINIMAL)


class InitAndCatalog(unittest.TestCase):
    def test_init_gives_a_scenario_predict_takes(self):
        scenario = stepcast.init("llama-3-8b", "dgx-h100", gpus=16)
        self.assertEqual(scenario["hardware"], {"box": "dgx-h100", "gpus": 16})
        self.assertGreater(stepcast.predict(scenario)["step_time_s"], 0)

    def test_init_unknown_model_is_a_value_error(self):
        with self.assertRaises(ValueError):
            stepcast.init("no-such-model", "dgx-h100")

    def test_catalog_gives_the_commands_json(self):
        got = stepcast.catalog("gpus")
        expected = cli_json("catalog", "gpus")
        if expected is not None:
            self.assertEqual(got, expected)
        self.assertEqual(set(stepcast.catalog()), set(cli_json("catalog") or stepcast.catalog()))
        with self.assertRaises(ValueError):
            stepcast.catalog("trains")


class Validate(unittest.TestCase):
    def test_path_gives_the_commands_json(self):
        got = stepcast.validate(RUNS)
        self.assertEqual(len(got["runs"]), 2)
        self.assertEqual(got["runs"][0]["status"], "ok")
        self.assertTrue(got["runs"][1]["status"].startswith("skipped"))
        expected = cli_json("validate", RUNS)
        if expected is not None:
            self.assertEqual(got, expected)

    def test_one_record_as_a_dict_and_a_list_of_them(self):
        records = [json.loads(line) for line in RUNS.read_text().splitlines() if line.strip()]
        one = stepcast.validate(records[0])
        self.assertEqual(one["runs"], stepcast.validate(RUNS)["runs"][:1])
        self.assertEqual(stepcast.validate(records)["runs"], stepcast.validate(RUNS)["runs"])

    def test_missing_file_is_file_not_found(self):
        with self.assertRaises(FileNotFoundError):
            stepcast.validate(ROOT / "no-such-runs.jsonl")


class Errors(unittest.TestCase):
    def test_input_error_is_a_value_error(self):
        self.assertTrue(issubclass(stepcast.InputError, ValueError))

    def test_dict_error_names_the_json_path(self):
        scenario = load(MINIMAL)
        scenario["training"]["micro_batch"] = -1
        with self.assertRaises(stepcast.InputError) as caught:
            stepcast.predict(scenario)
        e = caught.exception
        self.assertEqual(e.path, "/training/micro_batch")
        self.assertEqual(e.file, "<dict>")
        self.assertIn("/training/micro_batch", str(e))
        self.assertEqual(len(e.problems), 1)

    def test_file_error_names_the_file_and_every_problem(self):
        bad = ROOT / "tests/data/bad/three_mistakes.json"
        with self.assertRaises(stepcast.InputError) as caught:
            stepcast.scale(bad, [8])
        e = caught.exception
        self.assertEqual(e.file, str(bad))
        self.assertEqual([p["path"] for p in e.problems], ["/model", "/hardware/box", "/strategy/prefetch"])
        self.assertIn('did you mean "llama-3-8b"', str(e))
        self.assertIn(str(bad), str(e))

    def test_plan_and_validate_raise_input_errors_too(self):
        scenario = load(MINIMAL)
        scenario["micro_bach"] = 1
        with self.assertRaises(stepcast.InputError) as caught:
            stepcast.plan(scenario)
        self.assertEqual(caught.exception.path, "/micro_bach")
        record = json.loads(RUNS.read_text().splitlines()[0])
        record["unknown"] = 1
        with self.assertRaises(stepcast.InputError) as caught:
            stepcast.validate(record)
        self.assertEqual(caught.exception.path, "/unknown")

    def test_count_the_hardware_cannot_take_is_a_value_error(self):
        for call in (lambda: stepcast.predict(MINIMAL, gpus=12),  # not whole DGX A100 nodes
                     lambda: stepcast.scale(MINIMAL, [1, 0]),
                     lambda: stepcast.plan(MINIMAL, global_batch=0)):
            with self.assertRaises(ValueError) as caught:
                call()
            self.assertNotIsInstance(caught.exception, stepcast.InputError)

    def test_none_takes_the_scenarios_own(self):
        self.assertEqual(stepcast.predict(MINIMAL, gpus=None), stepcast.predict(MINIMAL))
        self.assertEqual(stepcast.plan(MINIMAL, gpus=None, global_batch=None, top=1)["gpus"], 8)

    def test_other_types_are_type_errors(self):
        with self.assertRaises(TypeError):
            stepcast.predict(42)

    def test_the_callers_dict_is_not_changed(self):
        scenario = load(MINIMAL)
        before = copy.deepcopy(scenario)
        stepcast.predict(scenario)
        self.assertEqual(scenario, before)


if __name__ == "__main__":
    unittest.main()
