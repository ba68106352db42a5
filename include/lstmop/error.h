// lstmop: the exception type every user error is reported with.
#pragma once

#include <stdexcept>
#include <string>

namespace lstmop {

// Thrown for every invalid argument, before any output is written.
// what() is a full sentence that names the argument, the expected and the
// actual value, e.g.
//   "params[1] (weight_hh, layer 0, forward) must be [12, 3], got [12, 4]".
// argument() is the argument's name as it starts the message ("params[1]",
// "input", "hx[0]", "batch_sizes", "dropout", "grad_y", ...).
class Error : public std::invalid_argument {
 public:
  Error(std::string argument, const std::string& message)
      : std::invalid_argument(message), argument_(std::move(argument)) {}
  const std::string& argument() const noexcept { return argument_; }

 private:
  std::string argument_;
};

}  // namespace lstmop
