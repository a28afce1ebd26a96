/// \file
/// The Python module `stepcast` (pybind11): predict, scale, plan, compare, need and validate,
/// each taking a dict or a path (str or os.PathLike), and catalog and init, each returning plain
/// dicts, the very JSON that the command's --json prints (init: the starter scenario) (cli/report_json.cpp, parsed by
/// Python's json module). Bad input raises stepcast.InputError, a ValueError whose `file`, `path` (JSON pointer) and
/// `problems` (every problem of the input, as dicts {file, path, message}) say where; a count the hardware cannot take
/// or an impossible option raises ValueError; a missing file FileNotFoundError. The computations release the GIL.

#include "report/report.hpp"

#include "base/json_input.hpp"
#include "planner/need.hpp"
#include "planner/plan.hpp"
#include "report/need_view.hpp"
#include "scenario/starter.hpp"
#include "predict/predict.hpp"
#include "scenario/scenario.hpp"
#include "topologies/hardware_file.hpp"
#include "validate/validation.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef STEPCAST_VERSION
#define STEPCAST_VERSION "unknown"
#endif

namespace py = pybind11;

namespace {

using namespace stepcast;

/// The name an input given as a dict goes by in error messages and in InputError.file.
constexpr const char* kDictName = "<dict>";

/// stepcast.InputError, created once at import; never freed (it lives as long as the module).
PyObject* g_input_error = nullptr;

/// A count the hardware cannot take, an option out of range: ValueError with this message.
struct OptionError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Python's json.loads of `text`: the plain dict of a --json report.
py::object from_json(const std::string& text) { return py::module_::import("json").attr("loads")(text); }

/// Python's json.dumps of `value` (a dict or list), for the readers that take JSON text.
std::string to_json(const py::handle& value) {
  return py::module_::import("json").attr("dumps")(value).cast<std::string>();
}

/// A path given as str or os.PathLike; nullopt for anything else.
std::optional<std::string> as_path(const py::handle& value) {
  if (py::isinstance<py::str>(value) || py::hasattr(value, "__fspath__"))
    return py::module_::import("os").attr("fspath")(value).cast<std::string>();
  return std::nullopt;
}

/// The scenario given as a dict (read as a scenario file's text would be) or a path.
Scenario scenario_of(const py::handle& value) {
  if (py::isinstance<py::dict>(value)) {
    const std::string text = to_json(value);
    py::gil_scoped_release unlocked;
    return parse_scenario(text, kDictName);
  }
  if (const auto path = as_path(value)) {
    py::gil_scoped_release unlocked;
    return load_scenario(*path);
  }
  throw py::type_error("a scenario is a dict or a path (str or os.PathLike), got " +
                       py::str(py::type::of(value)).cast<std::string>());
}

/// The scenario on `gpus` GPUs (None: as written); with_gpus's std::invalid_argument is the
/// caller's count, so it becomes ValueError.
Scenario on_gpus(const Scenario& s, std::optional<int> gpus) {
  if (!gpus) return s;
  if (*gpus < 1) throw OptionError("gpus: expected a count >= 1, got " + std::to_string(*gpus));
  try {
    return with_gpus(s, *gpus);
  } catch (const InputError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw OptionError(s.file + ": gpus=" + std::to_string(*gpus) + ": " + e.what());
  }
}

py::dict run_predict(const py::object& scenario, std::optional<int> gpus) {
  const Scenario s = on_gpus(scenario_of(scenario), gpus);
  std::string text;
  {
    py::gil_scoped_release unlocked;
    text = cli::predict_json(s, predict(s));
  }
  return from_json(text);
}

py::dict run_scale(const py::object& scenario, const std::vector<int>& gpus, bool fixed_batch) {
  if (gpus.empty()) throw OptionError("scale needs at least one GPU count");
  const Scenario base = scenario_of(scenario);
  std::vector<Scenario> scenarios;
  for (int n : gpus) {
    if (!fixed_batch) {
      scenarios.push_back(on_gpus(base, n));
      continue;
    }
    try {
      scenarios.push_back(with_gpus_at_global_batch(base, n));
    } catch (const InputError&) {
      throw;
    } catch (const std::invalid_argument& e) {
      throw OptionError(base.file + ": gpus=" + std::to_string(n) + ", fixed_batch: " + e.what());
    }
  }
  std::string text;
  {
    py::gil_scoped_release unlocked;
    std::vector<Prediction> predictions;
    for (const Scenario& s : scenarios) predictions.push_back(predict(s));
    text = cli::scale_json(base, cli::scale_rows(scenarios, predictions, base.price_per_gpu_hour_usd), fixed_batch);
  }
  return from_json(text);
}

py::dict run_plan(const py::object& scenario, std::optional<int> gpus, std::optional<std::int64_t> global_batch,
                  const std::string& objective, double max_memory_fraction, int top) {
  const Scenario s = on_gpus(scenario_of(scenario), gpus);
  PlanOptions options;
  try {
    options.objective = parse_plan_objective(objective);
  } catch (const std::invalid_argument& e) {
    throw OptionError(std::string("objective: ") + e.what());
  }
  if (options.objective == PlanObjective::cost && !s.price_per_gpu_hour_usd)
    throw OptionError(s.file + ": objective 'cost' needs price_per_gpu_hour_usd in the scenario");
  if (global_batch && *global_batch < 1) throw OptionError("global_batch: expected a count >= 1 (or None)");
  if (!(max_memory_fraction > 0 && max_memory_fraction <= 1))
    throw OptionError("max_memory_fraction: expected a fraction in (0, 1]");
  if (top < 1) throw OptionError("top: expected a count >= 1");
  options.global_batch = global_batch.value_or(0);
  options.max_memory_fraction = max_memory_fraction;
  options.top = top;
  std::string text;
  {
    py::gil_scoped_release unlocked;
    text = cli::plan_json(s, plan(s, options));
  }
  return from_json(text);
}

py::dict run_compare(const std::vector<py::object>& scenarios) {
  if (scenarios.size() < 2) throw OptionError("compare needs two scenarios or more");
  std::vector<Scenario> loaded;
  for (const py::object& s : scenarios) loaded.push_back(scenario_of(s));
  std::string text;
  {
    py::gil_scoped_release unlocked;
    std::vector<cli::CompareRow> rows;
    for (const Scenario& s : loaded) rows.push_back(cli::compare_row(s, predict(s)));
    cli::compare_against_first(rows);
    text = cli::compare_json(rows);
  }
  return from_json(text);
}

py::dict run_need(const py::object& scenario, double exposed_comm, double min_gbps, double max_gbps, double tolerance,
                  int curve_points) {
  const Scenario s = scenario_of(scenario);
  NeedOptions options;
  options.exposed_fraction = exposed_comm;
  options.min_Gbps = min_gbps;
  options.max_Gbps = max_gbps;
  options.tolerance = tolerance;
  options.curve_points = curve_points;
  std::string text;
  try {
    py::gil_scoped_release unlocked;
    text = cli::need_json(need(s, options));
  } catch (const InputError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw OptionError(s.file + ": " + e.what());
  }
  return from_json(text);
}

py::dict run_init(const std::string& model, const std::string& box, std::optional<int> gpus) {
  try {
    return from_json(starter_scenario(StarterRequest{model, box, gpus.value_or(0)}));
  } catch (const InputError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw OptionError(e.what());
  }
}

py::dict run_catalog(std::optional<std::string> section) {
  std::vector<cli::CatalogSection> sections;
  try {
    if (section) {
      sections.push_back(cli::parse_catalog_section(*section));
    } else {
      for (const std::string& n : cli::catalog_section_names()) sections.push_back(cli::parse_catalog_section(n));
    }
  } catch (const std::invalid_argument& e) {
    throw OptionError(std::string("section: ") + e.what());
  }
  return from_json(cli::catalog_json(sections));
}

[[noreturn]] void raise_file_not_found(const std::string& message) {
  PyErr_SetString(PyExc_FileNotFoundError, message.c_str());
  throw py::error_already_set();
}

/// Measured-run records: a path (a .jsonl file or a folder of them), one record as a dict,
/// or a list of record dicts (named "<dict>", line = position from 1).
std::vector<MeasuredRun> runs_of(const py::handle& value) {
  if (py::isinstance<py::dict>(value)) return {parse_measured_run(to_json(value), kDictName, 1)};
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    std::vector<MeasuredRun> runs;
    int line = 0;
    for (const py::handle item : value) {
      ++line;
      if (!py::isinstance<py::dict>(item)) throw py::type_error("a list of runs holds dicts (one record each)");
      runs.push_back(parse_measured_run(to_json(item), kDictName, line));
    }
    return runs;
  }
  if (const auto path = as_path(value)) {
    py::gil_scoped_release unlocked;
    return load_measured_runs(*path);
  }
  throw py::type_error("runs are a path (str or os.PathLike), a record dict or a list of them, got " +
                       py::str(py::type::of(value)).cast<std::string>());
}

py::dict run_validate(const py::object& runs_in, const py::object& calibration_in) {
  if (const auto path = as_path(runs_in); path && !std::filesystem::exists(*path))
    raise_file_not_found("no such file or folder: " + *path);
  const std::vector<MeasuredRun> runs = runs_of(runs_in);
  std::shared_ptr<const HardwareFile> calibration;
  std::string calibration_file;
  if (!calibration_in.is_none()) {
    const auto path = as_path(calibration_in);
    if (!path) throw py::type_error("calibration is a path (str or os.PathLike) or None");
    if (!std::filesystem::exists(*path)) raise_file_not_found("no such hardware file: " + *path);
    calibration_file = *path;
    py::gil_scoped_release unlocked;
    calibration = std::make_shared<const HardwareFile>(load_hardware(*path));
  }
  std::string text;
  {
    py::gil_scoped_release unlocked;
    text = cli::validate_json(validate_runs(runs, calibration, calibration_file));
  }
  return from_json(text);
}

/// stepcast.InputError(message) with file, path and problems set from `e`.
void raise_input_error(const InputError& e) {
  py::list problems;
  for (const InputProblem& p : e.problems()) {
    py::dict d;
    d["file"] = p.file;
    d["path"] = p.json_path;
    d["message"] = p.message;
    problems.append(d);
  }
  py::object error = py::reinterpret_borrow<py::object>(g_input_error)(e.what());
  error.attr("file") = e.file();
  error.attr("path") = e.json_path();
  error.attr("problems") = problems;
  PyErr_SetObject(g_input_error, error.ptr());
}

}  // namespace

PYBIND11_MODULE(stepcast, m) {
  m.doc() =
      "stepcast: a performance model of distributed GPU training. predict, scale, plan, "
      "compare, need and validate take a scenario (or measured runs) as a dict or a path and "
      "return the dict that `stepcast <command> --json` prints; catalog returns the catalogs "
      "and init a starter scenario, as dicts.";
  m.attr("__version__") = STEPCAST_VERSION;

  g_input_error = PyErr_NewExceptionWithDoc(
      "stepcast.InputError",
      "Bad input: a scenario or record that cannot be read or is invalid. Attributes: file "
      "(the file, or '<dict>'), path (the JSON pointer of the first problem, '' for the whole "
      "input) and problems (every problem: dicts with file, path and message).",
      PyExc_ValueError, nullptr);
  if (!g_input_error) throw py::error_already_set();
  m.add_object("InputError", py::handle(g_input_error));
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const InputError& e) {
      raise_input_error(e);
    } catch (const OptionError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  m.def("predict", &run_predict, py::arg("scenario"), py::arg("gpus") = py::none(),
        "The prediction of one scenario (a dict or a path), optionally on `gpus` GPUs instead of "
        "the scenario's: the dict of `stepcast predict --json` (step_time_s, tokens_per_s_per_gpu, "
        "mfu, memory_per_gpu_bytes, fits, simulation, ...).");
  m.def("scale", &run_scale, py::arg("scenario"), py::arg("gpus"), py::arg("fixed_batch") = false,
        "The scenario predicted on each GPU count of `gpus` (a list): the dict of `stepcast "
        "scale --json`, {scenario, baseline_gpus, rows: [...]}; fixed_batch holds the global batch "
        "(as --fixed-batch).");
  m.def("plan", &run_plan, py::arg("scenario"), py::arg("gpus") = py::none(), py::arg("global_batch") = py::none(),
        py::arg("objective") = "time", py::arg("max_memory_fraction") = 0.9, py::arg("top") = 5,
        "The best layouts of the job (a dict or a path): the dict of `stepcast plan --json`. "
        "gpus and global_batch None take the scenario's; objective is time, tokens_per_s or cost.");
  m.def("compare", &run_compare, py::arg("scenarios"),
        "One job on several hardware choices: `scenarios` is a list of two or more scenarios "
        "(dicts or paths). The dict of `stepcast compare --json`, {rows: [...]}.");
  m.def("need", &run_need, py::arg("scenario"), py::arg("exposed_comm") = 0.05, py::arg("min_gbps") = 1.0,
        py::arg("max_gbps") = 102400.0, py::arg("tolerance") = 0.01, py::arg("curve_points") = 9,
        "The smallest inter-node line rate per node (Gb/s) at which exposed communication is at "
        "most `exposed_comm` (a fraction) of the step: the dict of `stepcast need --json`.");
  m.def("init", &run_init, py::arg("model"), py::arg("box"), py::arg("gpus") = py::none(),
        "A starter scenario for a catalog model on a catalog box (gpus None: one box), as the "
        "dict `stepcast init` writes; predict() takes it as it is.");
  m.def("catalog", &run_catalog, py::arg("section") = py::none(),
        "The catalogs (models, gpus, boxes, clusters, links, algorithms; None: all) as the dict "
        "of `stepcast catalog --json`.");
  m.def("validate", &run_validate, py::arg("runs"), py::arg("calibration") = py::none(),
        "Predictions against measured runs: `runs` is a path (.jsonl file or folder), one "
        "record dict or a list of them; calibration an optional hardware file from `stepcast "
        "fit`. The dict of `stepcast validate --json`.");
}
