/// \file
/// User catalog folders: the front end reads them and hands their documents to the
/// catalogs (add_links, add_gpus, add_boxes, add_clusters, add_models), so that a scenario
/// can name hardware and models of one's own. A folder holds any of links.json, gpus.json,
/// boxes.json, clusters.json and models.json, each in the built-in catalog's format; they
/// are added in that order (a box names GPUs and links, a cluster a box). Folders come from
/// STEPCAST_CATALOG_PATH (':'-separated, first to last) and then `--catalog DIR` (in the
/// order given). A user entry never redefines one already in the catalog: the same name
/// is an error naming the file and the entry.
#pragma once

#include <string>
#include <vector>

namespace stepcast::cli {

/// The catalog files a folder may hold, in the order they are added.
const std::vector<std::string>& user_catalog_files();

/// The folders of STEPCAST_CATALOG_PATH (empty entries skipped) followed by `dirs`.
std::vector<std::string> catalog_folders(const std::vector<std::string>& dirs);

/// Reads every catalog file of every folder and adds it. Throws std::runtime_error (a user
/// error) for a folder that does not exist, is not a folder, holds an unknown .json file
/// (with a "did you mean") or none of the catalog files; InputError for a bad entry.
void load_user_catalogs(const std::vector<std::string>& folders);

}  // namespace stepcast::cli
