// The layout of an exported policy directory, shared by the commands that
// write it (study export, up) and the backtest that reads it.
#ifndef RISTRETTO_OPS_EXPORT_LAYOUT_H_
#define RISTRETTO_OPS_EXPORT_LAYOUT_H_

namespace ristretto::ops {

// An exported trial with several refits (study export) holds one policy
// per refit in <dir>/refit-0, <dir>/refit-1, …; the backtest plays each and
// scores capital split equally among them, as the lockbox did.
inline constexpr char kRefitDirPrefix[] = "refit-";

}  // namespace ristretto::ops

#endif  // RISTRETTO_OPS_EXPORT_LAYOUT_H_
