// Recursive descent over the lexer's tokens, with jinja2's precedence: ternary < or < and < not
// < comparison (in, ==, <, ...) < ~ < + - < * / // % < unary - < ** < filters and tests (|, is)
// < postfix (. [] ()) < primary.
#include "common/error.h"
#include "chat/jinja/ast.h"
#include "chat/jinja/lexer.h"

namespace ember::llm::jinja {

namespace {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Body parse_all() {
    std::string stop;
    Body body = parse_body({}, stop);
    if (peek().kind != Token::Kind::End) fail("unexpected {% " + stop + " %}");
    return body;
  }

 private:
  using K = Token::Kind;
  const Token& peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  const Token& next() { return t_[std::min(i_++, t_.size() - 1)]; }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(what, "chat template line " + std::to_string(peek().line),
                "ember's template interpreter supports the Jinja subset chat templates use");
  }
  bool is_op(const char* op, size_t ahead = 0) const { return peek(ahead).kind == K::Op && peek(ahead).text == op; }
  bool is_name(const char* n, size_t ahead = 0) const { return peek(ahead).kind == K::Name && peek(ahead).text == n; }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(std::string("expected '") + op + "'");
    i_++;
  }
  std::string expect_name() {
    if (peek().kind != K::Name) fail("expected a name");
    return next().text;
  }
  void expect_block_end() {
    if (peek().kind != K::BlockEnd) fail("expected %}");
    i_++;
  }

  // Statements until a block tag whose keyword is in `stops` (left unconsumed after its name,
  // which is returned in `stop`).
  Body parse_body(const std::vector<std::string>& stops, std::string& stop) {
    Body body;
    while (true) {
      const Token& tok = peek();
      if (tok.kind == K::End) {
        if (!stops.empty()) fail("missing {% " + stops.back() + " %}");
        return body;
      }
      if (tok.kind == K::Text) {
        body.push_back({Node::Kind::Text, tok.line, tok.text});
        i_++;
      } else if (tok.kind == K::VarBegin) {
        i_++;
        Node n{Node::Kind::Output, tok.line};
        n.expr = parse_expr();
        if (peek().kind != K::VarEnd) fail("expected }}");
        i_++;
        body.push_back(std::move(n));
      } else if (tok.kind == K::BlockBegin) {
        if (peek(1).kind != K::Name) fail("expected a statement name after {%");
        std::string keyword = peek(1).text;
        for (const auto& s : stops)
          if (keyword == s) {
            i_ += 2;
            stop = keyword;
            return body;
          }
        i_ += 2;
        parse_statement(keyword, tok.line, body);
      } else {
        fail("unexpected token");
      }
    }
  }

  void parse_statement(const std::string& keyword, size_t line, Body& body) {
    std::string stop;
    if (keyword == "if") {
      Node n{Node::Kind::If, line};
      ExprPtr cond = parse_expr();
      while (true) {
        expect_block_end();
        Body b = parse_body({"elif", "else", "endif"}, stop);
        n.branches.emplace_back(cond, std::move(b));
        if (stop == "elif") {
          cond = parse_expr();
          continue;
        }
        if (stop == "else") {
          expect_block_end();
          n.else_body = parse_body({"endif"}, stop);
        }
        break;
      }
      expect_block_end();
      body.push_back(std::move(n));
    } else if (keyword == "for") {
      Node n{Node::Kind::For, line};
      n.targets.push_back(expect_name());
      while (is_op(",")) {
        i_++;
        n.targets.push_back(expect_name());
      }
      if (!is_name("in")) fail("expected 'in' in for loop");
      i_++;
      n.expr = parse_or();  // not a ternary: a trailing `if` filters the loop
      if (is_name("if")) {
        i_++;
        n.filter = parse_or();
      }
      if (is_name("recursive")) fail("recursive loops are not supported");
      expect_block_end();
      n.body = parse_body({"else", "endfor"}, stop);
      if (stop == "else") {
        expect_block_end();
        n.else_body = parse_body({"endfor"}, stop);
      }
      expect_block_end();
      body.push_back(std::move(n));
    } else if (keyword == "set") {
      Node n{Node::Kind::Set, line};
      n.targets.push_back(expect_name());
      if (is_op(".")) {
        i_++;
        n.targets.push_back(expect_name());
      }
      if (!is_op("=")) fail("block {% set %} (without '=') is not supported");
      i_++;
      n.expr = parse_expr();
      expect_block_end();
      body.push_back(std::move(n));
    } else if (keyword == "macro") {
      Node n{Node::Kind::Macro, line};
      n.text = expect_name();
      expect_op("(");
      while (!is_op(")")) {
        std::string p = expect_name();
        ExprPtr def;
        if (is_op("=")) {
          i_++;
          def = parse_expr();
        }
        n.params.emplace_back(p, def);
        if (!is_op(",")) break;
        i_++;
      }
      expect_op(")");
      expect_block_end();
      n.body = parse_body({"endmacro"}, stop);
      expect_block_end();
      body.push_back(std::move(n));
    } else if (keyword == "break" || keyword == "continue") {
      expect_block_end();
      body.push_back({keyword == "break" ? Node::Kind::Break : Node::Kind::Continue, line});
    } else if (keyword == "generation") {
      // transformers' marker around assistant text: renders its body unchanged.
      expect_block_end();
      Body inner = parse_body({"endgeneration"}, stop);
      expect_block_end();
      for (auto& x : inner) body.push_back(std::move(x));
    } else {
      fail("unsupported statement {% " + keyword + " %}");
    }
  }

  ExprPtr make(Expr::Kind kind, std::vector<ExprPtr> args = {}, std::string name = "") {
    auto e = std::make_shared<Expr>();
    e->kind = kind;
    e->line = peek().line;
    e->args = std::move(args);
    e->name = std::move(name);
    return e;
  }

  ExprPtr parse_expr() {
    ExprPtr e = parse_or();
    if (is_name("if")) {
      i_++;
      ExprPtr cond = parse_or();
      ExprPtr otherwise;
      if (is_name("else")) {
        i_++;
        otherwise = parse_expr();
      } else {
        otherwise = make(Expr::Kind::Literal);  // undefined, as jinja2
      }
      return make(Expr::Kind::Ternary, {cond, e, otherwise});
    }
    return e;
  }
  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      i_++;
      e = make(Expr::Kind::Or, {e, parse_and()});
    }
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      i_++;
      e = make(Expr::Kind::And, {e, parse_not()});
    }
    return e;
  }
  ExprPtr parse_not() {
    if (is_name("not")) {
      i_++;
      return make(Expr::Kind::Not, {parse_not()});
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    ExprPtr e = parse_concat();
    while (true) {
      static const char* ops[] = {"==", "!=", "<", ">", "<=", ">="};
      bool matched = false;
      for (const char* op : ops)
        if (is_op(op)) {
          i_++;
          e = make(Expr::Kind::Binary, {e, parse_concat()}, op);
          matched = true;
          break;
        }
      if (matched) continue;
      if (is_name("in") || (is_name("not") && is_name("in", 1))) {
        bool negated = is_name("not");
        i_ += negated ? 2 : 1;
        e = make(Expr::Kind::Binary, {e, parse_concat()}, "in");
        e->negated = negated;
        continue;
      }
      return e;
    }
  }
  ExprPtr parse_concat() {
    ExprPtr e = parse_additive();
    while (is_op("~")) {
      i_++;
      e = make(Expr::Kind::Binary, {e, parse_additive()}, "~");
    }
    return e;
  }
  ExprPtr parse_additive() {
    ExprPtr e = parse_multiplicative();
    while (is_op("+") || is_op("-")) {
      std::string op = next().text;
      e = make(Expr::Kind::Binary, {e, parse_multiplicative()}, op);
    }
    return e;
  }
  ExprPtr parse_multiplicative() {
    ExprPtr e = parse_unary();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = next().text;
      e = make(Expr::Kind::Binary, {e, parse_unary()}, op);
    }
    return e;
  }
  ExprPtr parse_unary() {
    if (is_op("-")) {
      i_++;
      return make(Expr::Kind::Neg, {parse_unary()});
    }
    if (is_op("+")) {
      i_++;
      return parse_unary();
    }
    ExprPtr e = parse_filters(parse_postfix(parse_primary()));
    while (is_op("**")) {
      i_++;
      e = make(Expr::Kind::Binary, {e, parse_filters(parse_postfix(parse_primary()))}, "**");
    }
    return e;
  }

  // Call arguments after '(' up to ')': positional into `e->args`, keywords into `e->kwargs`.
  void parse_call_args(const ExprPtr& e) {
    expect_op("(");
    while (!is_op(")")) {
      if (peek().kind == K::Name && is_op("=", 1)) {
        std::string key = next().text;
        i_++;
        e->kwargs.emplace_back(key, parse_expr());
      } else {
        e->args.push_back(parse_expr());
      }
      if (!is_op(",")) break;
      i_++;
    }
    expect_op(")");
  }

  ExprPtr parse_filters(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        i_++;
        ExprPtr f = make(Expr::Kind::Filter, {e}, expect_name());
        if (is_op("(")) parse_call_args(f);
        e = parse_postfix(f);
      } else if (is_name("is")) {
        i_++;
        ExprPtr t = make(Expr::Kind::Test, {e});
        if (is_name("not")) {
          i_++;
          t->negated = true;
        }
        t->name = expect_name();
        if (is_op("(")) {
          parse_call_args(t);
        } else if (peek().kind == K::String || peek().kind == K::Int || peek().kind == K::Float ||
                   (peek().kind == K::Name && !is_name("and") && !is_name("or") && !is_name("else") && !is_name("if") &&
                    !is_name("is") && !is_name("in") && !is_name("not"))) {
          t->args.push_back(parse_primary());  // `is sameas false`, `is divisibleby 3`
        }
        e = t;
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (is_op(".")) {
        i_++;
        if (peek().kind == K::Int) {
          ExprPtr idx = make(Expr::Kind::Literal);
          idx->literal = Value::integer(std::stoll(next().text));
          e = make(Expr::Kind::Index, {e, idx});
        } else {
          e = make(Expr::Kind::Attr, {e}, expect_name());
        }
      } else if (is_op("[")) {
        i_++;
        ExprPtr parts[3];
        int n = 0;
        bool slice = false;
        while (true) {
          if (!is_op(":") && !is_op("]")) parts[n] = parse_expr();
          if (is_op(":")) {
            slice = true;
            if (++n > 2) fail("too many ':' in a slice");
            i_++;
            continue;
          }
          break;
        }
        expect_op("]");
        if (slice) {
          auto none = [&](ExprPtr p) { return p ? p : make(Expr::Kind::Literal); };
          e = make(Expr::Kind::Slice, {e, none(parts[0]), none(parts[1]), none(parts[2])});
        } else {
          if (!parts[0]) fail("empty subscript");
          e = make(Expr::Kind::Index, {e, parts[0]});
        }
      } else if (is_op("(")) {
        ExprPtr call = make(Expr::Kind::Call, {e});
        parse_call_args(call);
        e = call;
      } else {
        return e;
      }
    }
  }

  ExprPtr literal(Value v) {
    ExprPtr e = make(Expr::Kind::Literal);
    e->literal = std::move(v);
    return e;
  }

  ExprPtr parse_primary() {
    const Token& tok = peek();
    switch (tok.kind) {
      case K::String: {
        std::string s = next().text;
        while (peek().kind == K::String) s += next().text;  // adjacent literals concatenate
        return literal(Value::string(s));
      }
      case K::Int: return literal(Value::integer(std::stoll(next().text)));
      case K::Float: return literal(Value::real(std::stod(next().text)));
      case K::Name: {
        std::string n = next().text;
        if (n == "true" || n == "True") return literal(Value::boolean(true));
        if (n == "false" || n == "False") return literal(Value::boolean(false));
        if (n == "none" || n == "None") return literal(Value::none());
        return make(Expr::Kind::Name, {}, n);
      }
      case K::Op:
        if (tok.text == "(") {
          i_++;
          ExprPtr e = parse_expr();
          if (is_op(",")) {  // a tuple: evaluated as a list
            ExprPtr list = make(Expr::Kind::ListLit, {e});
            while (is_op(",")) {
              i_++;
              if (is_op(")")) break;
              list->args.push_back(parse_expr());
            }
            e = list;
          }
          expect_op(")");
          return e;
        }
        if (tok.text == "[") {
          i_++;
          ExprPtr list = make(Expr::Kind::ListLit);
          while (!is_op("]")) {
            list->args.push_back(parse_expr());
            if (!is_op(",")) break;
            i_++;
          }
          expect_op("]");
          return list;
        }
        if (tok.text == "{") {
          i_++;
          ExprPtr dict = make(Expr::Kind::DictLit);
          while (!is_op("}")) {
            dict->args.push_back(parse_expr());
            expect_op(":");
            dict->args.push_back(parse_expr());
            if (!is_op(",")) break;
            i_++;
          }
          expect_op("}");
          return dict;
        }
        break;
      default: break;
    }
    fail("unexpected '" + tok.text + "' in an expression");
  }

  std::vector<Token> t_;
  size_t i_ = 0;
};

}  // namespace

Body parse(const std::string& source) { return Parser(lex(source)).parse_all(); }

}  // namespace ember::llm::jinja
