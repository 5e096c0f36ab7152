#pragma once
// The toy event's command-line options, shared by the examples' front ends (kaas-reco,
// kaas-toy-event, kaas-toy-patches, kaas-framework): the same names, checks and help everywhere.

#include "examples/lartpc/toy_event.h"
#include "kaas/common/cli.h"

namespace kaas::examples {

inline void add_toy_event_options(kaas::cli::App& app, ToyEventConfig& toy) {
  app.add_option("--seed", toy.seed, "event seed");
  app.add_option("--wires", toy.wires, "wires per plane")->check(kaas::cli::range(48, 100000));
  app.add_option("--ticks", toy.ticks, "ticks per wire")->check(kaas::cli::range(48, 100000));
  app.add_option("--tracks", toy.tracks_per_plane, "muon tracks per plane")
      ->check(kaas::cli::range(0, 100000));
  app.add_option("--showers", toy.showers_per_plane, "EM showers per plane")
      ->check(kaas::cli::range(0, 100000));
}

}  // namespace kaas::examples
