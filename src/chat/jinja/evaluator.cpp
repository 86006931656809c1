// Walks the parsed template. Scoping as jinja2: a for loop (and a macro call) opens a scope,
// so `set` inside a loop does not change the variable outside; namespaces carry state out.
#include <cmath>
#include <ctime>
#include <map>

#include "common/error.h"
#include "chat/jinja/ast.h"
#include "chat/jinja/builtins.h"
#include "chat/jinja/template.h"

namespace ember::llm::jinja {

namespace {

enum class Flow { Normal, Break, Continue };

class Evaluator {
 public:
  template <class Json>
  explicit Evaluator(const Json& context) {
    scopes_.emplace_back();
    if (context.is_object())
      for (const auto& [k, v] : context.items()) scopes_.back()[k] = Value::from_json(v);
  }

  Flow run(const Body& body, std::string& out) {
    for (const Node& n : body) {
      Flow f = run(n, out);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

 private:
  Flow run(const Node& n, std::string& out) {
    switch (n.kind) {
      case Node::Kind::Text: out += n.text; break;
      case Node::Kind::Output: out += eval(*n.expr).str(); break;
      case Node::Kind::If:
        for (const auto& [cond, body] : n.branches)
          if (eval(*cond).truthy()) return run(body, out);
        return run(n.else_body, out);
      case Node::Kind::For: return run_for(n, out);
      case Node::Kind::Set: {
        Value v = eval(*n.expr);
        if (n.targets.size() == 1) {
          scopes_.back()[n.targets[0]] = std::move(v);
        } else {
          Value ns = lookup(n.targets[0]);
          if (ns.kind != Value::Kind::Namespace)
            template_error("cannot set attribute '" + n.targets[1] + "' of " + n.targets[0] + ", which is not a namespace", n.line);
          ns.set(n.targets[1], std::move(v));
        }
        break;
      }
      case Node::Kind::Macro: macros_[n.text] = &n; break;
      case Node::Kind::Break: return Flow::Break;
      case Node::Kind::Continue: return Flow::Continue;
    }
    return Flow::Normal;
  }

  Flow run_for(const Node& n, std::string& out) {
    List all = items_of(eval(*n.expr), n.line);
    scopes_.emplace_back();
    auto bind = [&](const Value& item) {
      if (n.targets.size() == 1) {
        scopes_.back()[n.targets[0]] = item;
        return;
      }
      List parts = items_of(item, n.line);
      if (parts.size() != n.targets.size()) template_error("cannot unpack " + item.repr() + " into " + std::to_string(n.targets.size()) + " names", n.line);
      for (size_t k = 0; k < parts.size(); k++) scopes_.back()[n.targets[k]] = parts[k];
    };
    List items;
    if (n.filter) {
      for (const auto& x : all) {
        bind(x);
        if (eval(*n.filter).truthy()) items.push_back(x);
      }
    } else {
      items = std::move(all);
    }
    for (size_t k = 0; k < items.size(); k++) {
      auto size = int64_t(items.size()), idx = int64_t(k);
      Dict loop = {{"index0", Value::integer(idx)},
                   {"index", Value::integer(idx + 1)},
                   {"revindex0", Value::integer(size - idx - 1)},
                   {"revindex", Value::integer(size - idx)},
                   {"first", Value::boolean(k == 0)},
                   {"last", Value::boolean(k + 1 == items.size())},
                   {"length", Value::integer(size)},
                   {"previtem", k ? items[k - 1] : Value()},
                   {"nextitem", k + 1 < items.size() ? items[k + 1] : Value()},
                   {"depth", Value::integer(1)},
                   {"depth0", Value::integer(0)}};
      scopes_.back()["loop"] = Value::make_dict(std::move(loop));
      bind(items[k]);
      if (run(n.body, out) == Flow::Break) break;
    }
    scopes_.pop_back();
    if (items.empty()) return run(n.else_body, out);
    return Flow::Normal;
  }

  Value lookup(const std::string& name) const {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
      auto it = s->find(name);
      if (it != s->end()) return it->second;
    }
    return Value();
  }

  Value eval(const Expr& e) {
    using K = Expr::Kind;
    switch (e.kind) {
      case K::Literal: return e.literal;
      case K::Name: return lookup(e.name);
      case K::Attr: {
        Value o = eval(*e.args[0]);
        if (o.is_undefined()) template_error("'" + describe(*e.args[0]) + "' is undefined (reading ." + e.name + ")", e.line);
        return o.get(e.name);
      }
      case K::Index: {
        Value o = eval(*e.args[0]), k = eval(*e.args[1]);
        if (o.is_undefined()) template_error("'" + describe(*e.args[0]) + "' is undefined", e.line);
        if (o.is_mapping()) return o.get(k.str());
        if (k.kind != Value::Kind::Int) return Value();
        List items = items_of(o, e.line);
        int64_t i = k.i < 0 ? k.i + int64_t(items.size()) : k.i;
        if (i < 0 || i >= int64_t(items.size())) return Value();
        return items[size_t(i)];
      }
      case K::Slice:
        return slice_of(eval(*e.args[0]), eval(*e.args[1]), eval(*e.args[2]), eval(*e.args[3]), e.line);
      case K::Call: return call(e);
      case K::Filter: {
        Value subject = eval(*e.args[0]);
        auto [args, kwargs] = arguments(e, 1);
        return apply_filter(e.name, subject, args, kwargs, e.line);
      }
      case K::Test: {
        Value subject = eval(*e.args[0]);
        auto [args, kwargs] = arguments(e, 1);
        return Value::boolean(apply_test(e.name, subject, args, e.line) != e.negated);
      }
      case K::Not: return Value::boolean(!eval(*e.args[0]).truthy());
      case K::Neg: {
        Value v = eval(*e.args[0]);
        if (v.kind == Value::Kind::Float) return Value::real(-v.f);
        if (v.kind == Value::Kind::Int) return Value::integer(-v.i);
        template_error("cannot negate " + v.repr(), e.line);
      }
      case K::And: {
        Value a = eval(*e.args[0]);
        return a.truthy() ? eval(*e.args[1]) : a;
      }
      case K::Or: {
        Value a = eval(*e.args[0]);
        return a.truthy() ? a : eval(*e.args[1]);
      }
      case K::Ternary: return eval(*e.args[0]).truthy() ? eval(*e.args[1]) : eval(*e.args[2]);
      case K::ListLit: {
        List items;
        for (const auto& a : e.args) items.push_back(eval(*a));
        return Value::make_list(std::move(items));
      }
      case K::DictLit: {
        Value d = Value::make_dict();
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) d.set(eval(*e.args[k]).str(), eval(*e.args[k + 1]));
        return d;
      }
      case K::Binary: return binary(e);
    }
    return Value();
  }

  static std::string describe(const Expr& e) {
    if (e.kind == Expr::Kind::Name) return e.name;
    if (e.kind == Expr::Kind::Attr) return describe(*e.args[0]) + "." + e.name;
    return "value";
  }

  std::pair<Args, Kwargs> arguments(const Expr& e, size_t first) {
    Args args;
    Kwargs kwargs;
    for (size_t k = first; k < e.args.size(); k++) args.push_back(eval(*e.args[k]));
    for (const auto& [name, x] : e.kwargs) kwargs.emplace_back(name, eval(*x));
    return {args, kwargs};
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    Value a = eval(*e.args[0]), b = eval(*e.args[1]);
    if (op == "==") return Value::boolean(a == b);
    if (op == "!=") return Value::boolean(!(a == b));
    if (op == "<") return Value::boolean(less_than(a, b));
    if (op == ">") return Value::boolean(less_than(b, a));
    if (op == "<=") return Value::boolean(!less_than(b, a));
    if (op == ">=") return Value::boolean(!less_than(a, b));
    if (op == "in") return Value::boolean(apply_test("in", a, {b}, e.line) != e.negated);
    if (op == "~") return Value::string(a.str() + b.str());
    if (op == "+") {
      if (a.is_string() && b.is_string()) return Value::string(a.s + b.s);
      if (a.kind == Value::Kind::List && b.kind == Value::Kind::List) {
        List items = *a.list;
        items.insert(items.end(), b.list->begin(), b.list->end());
        return Value::make_list(std::move(items));
      }
    }
    if (op == "*" && (a.is_string() || b.is_string())) {
      const Value& s = a.is_string() ? a : b;
      const Value& n = a.is_string() ? b : a;
      std::string out;
      for (int64_t k = 0; n.kind == Value::Kind::Int && k < n.i; k++) out += s.s;
      return Value::string(out);
    }
    bool numbers = (a.is_number() || a.kind == Value::Kind::Bool) && (b.is_number() || b.kind == Value::Kind::Bool);
    if (!numbers) template_error("unsupported operands for " + op + ": " + a.repr() + " and " + b.repr(), e.line);
    bool ints = a.kind != Value::Kind::Float && b.kind != Value::Kind::Float;
    double x = a.as_double(), y = b.as_double();
    int64_t xi = a.kind == Value::Kind::Bool ? a.b : a.i, yi = b.kind == Value::Kind::Bool ? b.b : b.i;
    if (op == "+") return ints ? Value::integer(xi + yi) : Value::real(x + y);
    if (op == "-") return ints ? Value::integer(xi - yi) : Value::real(x - y);
    if (op == "*") return ints ? Value::integer(xi * yi) : Value::real(x * y);
    if ((op == "/" || op == "//" || op == "%") && y == 0) template_error("division by zero", e.line);
    if (op == "/") return Value::real(x / y);
    if (op == "//") {
      if (!ints) return Value::real(std::floor(x / y));
      int64_t q = xi / yi;
      if ((xi % yi != 0) && ((xi < 0) != (yi < 0))) q--;
      return Value::integer(q);
    }
    if (op == "%") {
      if (!ints) return Value::real(x - y * std::floor(x / y));
      int64_t r = xi % yi;
      if (r != 0 && ((r < 0) != (yi < 0))) r += yi;
      return Value::integer(r);
    }
    if (op == "**") return ints && yi >= 0 ? Value::integer(int64_t(std::llround(std::pow(x, y)))) : Value::real(std::pow(x, y));
    template_error("unknown operator " + op, e.line);
  }

  Value call(const Expr& e) {
    const Expr& callee = *e.args[0];
    auto [args, kwargs] = arguments(e, 1);
    if (callee.kind == Expr::Kind::Attr) return call_method(eval(*callee.args[0]), callee.name, args, kwargs, e.line);
    if (callee.kind != Expr::Kind::Name) template_error("only functions and methods can be called", e.line);
    const std::string& fn = callee.name;
    if (fn == "raise_exception") throw Error(args.empty() ? "raise_exception()" : args[0].str(), "chat template (raise_exception)");
    if (fn == "namespace") {
      Value ns = Value::make_dict({}, true);
      if (!args.empty() && args[0].is_mapping())
        for (const auto& [k, v] : *args[0].dict) ns.set(k, v);
      for (const auto& [k, v] : kwargs) ns.set(k, v);
      return ns;
    }
    if (fn == "dict") {
      Value d = Value::make_dict();
      for (const auto& [k, v] : kwargs) d.set(k, v);
      return d;
    }
    if (fn == "range") {
      if (args.empty()) template_error("range() needs an argument", e.line);
      for (const auto& a : args)
        if (a.kind != Value::Kind::Int) template_error("range() needs integers", e.line);
      int64_t start = args.size() > 1 ? args[0].i : 0, stop = args.size() > 1 ? args[1].i : args[0].i, step = args.size() > 2 ? args[2].i : 1;
      if (step == 0) template_error("range() step cannot be zero", e.line);
      List items;
      for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) items.push_back(Value::integer(k));
      return Value::make_list(std::move(items));
    }
    if (fn == "strftime_now") {
      std::time_t now = std::time(nullptr);
      char buf[256];
      std::tm tm{};
      localtime_r(&now, &tm);
      size_t n = std::strftime(buf, sizeof buf, args.empty() ? "" : args[0].str().c_str(), &tm);
      return Value::string(std::string(buf, n));
    }
    auto macro = macros_.find(fn);
    if (macro == macros_.end()) template_error("unknown function '" + fn + "'", e.line);
    const Node& m = *macro->second;
    std::map<std::string, Value> frame;
    for (size_t k = 0; k < m.params.size(); k++) {
      const auto& [pname, def] = m.params[k];
      Value v = k < args.size() ? args[k] : Value();
      for (const auto& [kn, kv] : kwargs)
        if (kn == pname) v = kv;
      if (v.is_undefined() && def) v = eval(*def);
      frame[pname] = v;
    }
    scopes_.push_back(std::move(frame));
    std::string out;
    run(m.body, out);
    scopes_.pop_back();
    return Value::string(out);
  }

  std::vector<std::map<std::string, Value>> scopes_;
  std::map<std::string, const Node*> macros_;
};

}  // namespace

Template::Template(const std::string& source) : body_(std::make_shared<Body>(parse(source))) {}
Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const nlohmann::json& context) const {
  Evaluator ev(context);
  std::string out;
  ev.run(*body_, out);
  return out;
}

std::string Template::render(const nlohmann::ordered_json& context) const {
  Evaluator ev(context);
  std::string out;
  ev.run(*body_, out);
  return out;
}

}  // namespace ember::llm::jinja
