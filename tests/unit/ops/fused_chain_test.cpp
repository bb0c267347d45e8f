// The GPU's chain interpreter (Note [Fused chains on a GPU]) run on the host: the slots set_steps
// gives, and what each thread of the kernel computes, against a plain evaluation of the same
// program, element by element, with every register in its own array.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/ops/fused_chain.hpp"

namespace dt = devtensor;
namespace chain = dt::ops::fused_chain;
using Program = dt::ops::FusedChainProgram;

namespace {

/// An op of the chains below: its code, arity, and its functor as a plain function.
struct ChainOp {
  int code;
  int arity;
  std::function<float(float, float)> apply;
};
template <class Op>
ChainOp chain_op() {
  const int code = chain::code_of(Op::name, dt::DType::DT_FLOAT);
  BOOST_TEST_REQUIRE(code >= 0, Op::name);
  if constexpr (dt::ops::op_traits<Op>().pointwise_arity == 1)
    return {code, 1, [](float a, float) { return Op{}(a); }};
  else
    return {code, 2, [](float a, float b) { return Op{}(a, b); }};
}
std::vector<ChainOp> chain_ops() {
  namespace o = dt::ops;
  return {chain_op<o::Add>(),     chain_op<o::Sub>(), chain_op<o::Mul>(),     chain_op<o::Maximum>(),
          chain_op<o::Minimum>(), chain_op<o::Neg>(), chain_op<o::Square>(),  chain_op<o::Tanh>(),
          chain_op<o::Relu>(),    chain_op<o::Abs>(), chain_op<o::Sigmoid>(), chain_op<o::ReluGrad>()};
}

struct Input {
  std::uint8_t kind;
  std::vector<float> values;
  std::int64_t period = 0;
};

/// Element i of input k, as the program reads it.
float read(const Input& input, std::int64_t i) {
  if (input.kind == Program::full) return input.values[static_cast<std::size_t>(i)];
  if (input.kind == Program::scalar) return input.values[0];
  return input.values[static_cast<std::size_t>(i % input.period)];
}

/// The chain evaluated plainly: a register per input and per step, for each element.
std::vector<float> reference(const std::vector<Input>& inputs, const std::vector<chain::ChainStep>& steps,
                             const std::vector<ChainOp>& ops, std::int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    std::vector<float> r;
    for (const auto& input : inputs) r.push_back(read(input, i));
    for (const auto& s : steps) {
      const auto op = std::find_if(ops.begin(), ops.end(), [&](const ChainOp& o) { return o.code == s.code; });
      r.push_back(op->apply(r[static_cast<std::size_t>(s.a)], r[static_cast<std::size_t>(s.b)]));
    }
    out[static_cast<std::size_t>(i)] = r.back();
  }
  return out;
}

/// Every thread of a launch of `blocks` blocks of `threads`, one after another.
void run_kernel(const Program& p, std::int64_t threads, std::int64_t blocks) {
  for (std::int64_t block = 0; block < blocks; ++block)
    for (std::int64_t thread = 0; thread < threads; ++thread)
      chain::run_thread<float>(p, block, thread, threads, blocks);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) {
           return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
         });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fused_chain_interpreter)

// A straight chain keeps nothing in slots: each step reads the one before it from registers.
BOOST_AUTO_TEST_CASE(a_straight_chain_reads_its_previous_step_from_registers) {
  const auto ops = chain_ops();
  Program p;
  p.inputs = 2;  // x and a bias
  const std::vector<chain::ChainStep> steps{{ops[0].code, 0, 1}, {ops[8].code, 2, 2}, {ops[2].code, 3, 1}};
  chain::set_steps(p, steps);
  BOOST_TEST(p.steps == 3);
  BOOST_TEST(p.step[0].a == 0);
  BOOST_TEST(p.step[0].b == 1);
  BOOST_TEST(p.step[1].a == Program::kPrevious);
  BOOST_TEST(p.step[1].b == Program::kPrevious);
  BOOST_TEST(p.step[2].a == Program::kPrevious);
  BOOST_TEST(p.step[2].b == 1);
  for (int j = 0; j < 3; ++j) BOOST_TEST(p.step[static_cast<std::size_t>(j)].keep == Program::kNoSlot);
}

// A result read two steps later is kept in a slot, the slot of an input whose last reader is gone.
BOOST_AUTO_TEST_CASE(a_result_read_later_takes_a_freed_slot) {
  const auto ops = chain_ops();
  Program p;
  p.inputs = 2;
  // r2 = x + y (last read of y), r3 = -r2, r4 = r3 * r2 (r2 read again), r5 = r4 - x
  const std::vector<chain::ChainStep> steps{
      {ops[0].code, 0, 1}, {ops[5].code, 2, 2}, {ops[2].code, 3, 2}, {ops[1].code, 4, 0}};
  chain::set_steps(p, steps);
  BOOST_TEST(p.step[0].keep == 1);  // y's slot: step 0 was its last reader
  BOOST_TEST(p.step[2].a == Program::kPrevious);
  BOOST_TEST(p.step[2].b == 1);
  BOOST_TEST(p.step[3].b == 0);
}

BOOST_AUTO_TEST_CASE(programs_the_kernel_cannot_hold_are_refused) {
  Program p;
  p.inputs = 1;
  BOOST_CHECK_EXCEPTION(chain::set_steps(p, {}), dt::InternalError, [](const dt::InternalError& e) {
    return std::string(e.what()).find("1 inputs and 0 steps does not fit") != std::string::npos;
  });
  const int add = chain_ops()[0].code;
  std::vector<chain::ChainStep> too_many(Program::kMaxRegisters, {add, 0, 0});
  for (std::size_t j = 1; j < too_many.size(); ++j) too_many[j].a = static_cast<int>(j);
  BOOST_CHECK_THROW(chain::set_steps(p, too_many), dt::InternalError);
  const std::vector<chain::ChainStep> reads_ahead{{add, 0, 1}};  // register 1 is this step's own result
  BOOST_CHECK_EXCEPTION(chain::set_steps(p, reads_ahead), dt::InternalError, [](const dt::InternalError& e) {
    return std::string(e.what()).find("reads register 1, which is not an earlier one") != std::string::npos;
  });
}

// Random programs (1–4 inputs of every kind, up to 27 steps reading any earlier register) run by
// the kernel's threads under several launch shapes give the plain evaluation's bits; so does a
// chain run in place over its input 0, as after a fused MatMul.
BOOST_AUTO_TEST_CASE(random_chains_equal_the_plain_evaluation) {
  const auto ops = chain_ops();
  std::mt19937 rng(2026);
  const auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::uniform_real_distribution<float> value(-2, 2);
  for (int trial = 0; trial < 200; ++trial) {
    const std::int64_t period = uniform(1, 13);
    const std::int64_t n = period * uniform(1, 97);
    std::vector<Input> inputs(static_cast<std::size_t>(uniform(1, 4)));
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      auto& input = inputs[k];
      input.kind = static_cast<std::uint8_t>(k == 0 ? 0 : uniform(0, 2));  // input 0 is full (in place)
      input.period = input.kind == Program::suffix ? period : 0;
      const std::int64_t size = input.kind == Program::full ? n : input.kind == Program::scalar ? 1 : period;
      for (std::int64_t i = 0; i < size; ++i) input.values.push_back(value(rng));
    }
    std::vector<chain::ChainStep> steps(static_cast<std::size_t>(uniform(1, 27)));
    for (std::size_t j = 0; j < steps.size(); ++j) {
      const auto& op = ops[static_cast<std::size_t>(uniform(0, static_cast<int>(ops.size()) - 1))];
      const int registers = static_cast<int>(inputs.size() + j);
      // Mostly the previous step, as in real chains, but any earlier register too.
      const auto pick = [&] { return j > 0 && uniform(0, 1) ? registers - 1 : uniform(0, registers - 1); };
      steps[j].code = op.code;
      steps[j].a = pick();
      steps[j].b = op.arity == 1 ? steps[j].a : pick();
    }
    const auto expected = reference(inputs, steps, ops, n);

    Program p;
    p.n = n;
    p.inputs = static_cast<int>(inputs.size());
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      p.sources[k] = inputs[k].values.data();
      p.kinds[k] = inputs[k].kind;
      p.periods[k] = inputs[k].period;
    }
    chain::set_steps(p, steps);
    const std::int64_t tile32 = chain::blocks_for<float>(n, 32, n + 1);
    // The GPU's launch, one tile per block, the grid-stride loop, blocks of odd widths.
    const std::vector<std::pair<std::int64_t, std::int64_t>> launches{
        {256, chain::blocks_for<float>(n, 256, 1024)}, {32, tile32}, {32, (tile32 + 1) / 2}, {7, 1}, {1, 3}};
    for (const auto& [threads, blocks] : launches) {
      std::vector<float> out(static_cast<std::size_t>(n), -99.0f);
      p.output = out.data();
      run_kernel(p, threads, blocks);
      BOOST_TEST_REQUIRE(same_bits(out, expected), "trial " << trial << ", " << steps.size() << " steps, n " << n
                                                            << ", " << threads << " threads × " << blocks << " blocks");
    }
    std::vector<float> in_place = inputs[0].values;  // the output is input 0
    p.sources[0] = in_place.data();
    p.output = in_place.data();
    run_kernel(p, 32, (tile32 + 1) / 2);
    BOOST_TEST_REQUIRE(same_bits(in_place, expected), "trial " << trial << ", in place");
  }
}

// The lanes of a suffix input advance without a division, wrapping around its period.
BOOST_AUTO_TEST_CASE(a_bias_longer_than_a_block_and_one_shorter_line_up) {
  const auto ops = chain_ops();
  for (const std::int64_t period : {1, 3, 32, 45, 300}) {
    const std::int64_t n = period * 11;
    std::vector<float> x(static_cast<std::size_t>(n)), bias(static_cast<std::size_t>(period));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
    for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = 1000.0f * static_cast<float>(i + 1);
    Program p;
    p.n = n;
    p.inputs = 2;
    p.sources[0] = x.data();
    p.sources[1] = bias.data();
    p.kinds[1] = Program::suffix;
    p.periods[1] = period;
    const std::vector<chain::ChainStep> steps{{ops[0].code, 0, 1}};
    chain::set_steps(p, steps);
    std::vector<float> out(static_cast<std::size_t>(n));
    p.output = out.data();
    run_kernel(p, 32, 2);
    for (std::int64_t i = 0; i < n; ++i)
      BOOST_TEST_REQUIRE(
          out[static_cast<std::size_t>(i)] == static_cast<float>(i) + 1000.0f * static_cast<float>(i % period + 1),
          "period " << period << ", element " << i);
  }
}

BOOST_AUTO_TEST_SUITE_END()
