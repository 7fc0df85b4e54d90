#!/bin/sh
# Makes the worked example of docs/eval.md, which tests/eval.rs runs too:
#
#   scripts/eval-example.sh DIR
#
# DIR (new or empty) gets
#   DIR/mathlib/        a git repository: a tiny Python library whose history adds one function
#                       and its test per commit (six such changes), plus one change with no test;
#   DIR/shared/agent.sh the agent: as the worker it adds the function its task names — the right
#                       version (`agent.sh reproduce`, from shared/reproduce/) or a plausible but
#                       wrong one (`agent.sh wrong`, from shared/wrong/); as the judge it approves
#                       everything (a lenient judge). Each call is appended to shared/calls.log;
#   DIR/reproduce.yml   a configuration with the reproducing agent,
#   DIR/wrong.yml       the same with the wrong one.
# Needs git and python3 (the tests run with `python3 -m unittest`); no network. The commits have
# fixed dates and authors, so their ids are the same on every machine.
set -eu

dir=${1:?usage: scripts/eval-example.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
repo=$dir/mathlib
shared=$dir/shared
if [ -e "$repo" ]; then
	echo "$repo exists already: give a new or empty folder" >&2
	exit 2
fi
mkdir -p "$repo/tests" "$shared/reproduce" "$shared/wrong"

export GIT_AUTHOR_NAME="Ada Example" GIT_AUTHOR_EMAIL="ada@example.com"
export GIT_COMMITTER_NAME="Ada Example" GIT_COMMITTER_EMAIL="ada@example.com"
day=0
commit() {
	day=$((day + 1))
	GIT_AUTHOR_DATE="2025-01-$(printf %02d "$day")T10:00:00Z" \
		GIT_COMMITTER_DATE="2025-01-$(printf %02d "$day")T10:00:00Z" \
		git -C "$repo" -c commit.gpgsign=false commit -q "$@"
}

# change NAME SIGNATURE SUBJECT BODY: the right body, the wrong body and the test come on stdin
# as three parts separated by lines holding only `--`.
change() {
	name=$1 signature=$2 subject=$3 body=$4
	awk -v r="$shared/reproduce/$name.py" -v w="$shared/wrong/$name.py" \
		-v t="$repo/tests/test_$name.py" -v sig="$signature" '
		BEGIN { part = 1; print "def " sig ":" > r; print "def " sig ":" > w }
		/^--$/ { part++; next }
		part == 1 { print > r } part == 2 { print > w } part == 3 { print > t }'
	printf '\n\n' >>"$repo/mathlib.py"
	cat "$shared/reproduce/$name.py" >>"$repo/mathlib.py"
	git -C "$repo" add mathlib.py "tests/test_$name.py"
	commit -m "$subject" -m "$body"
}

cat >"$repo/mathlib.py" <<'EOF'
"""Small arithmetic and text helpers."""


def identity(x):
    """Returns x unchanged."""
    return x
EOF
: >"$repo/tests/__init__.py"
cat >"$repo/tests/test_identity.py" <<'EOF'
import unittest

from mathlib import identity


class IdentityTest(unittest.TestCase):
    def test_returns_its_argument(self):
        self.assertEqual(identity(7), 7)
EOF
printf '__pycache__/\n' >"$repo/.gitignore"
printf '# mathlib\n\nSmall arithmetic and text helpers.\n' >"$repo/README.md"
git -C "$repo" init -q -b main
git -C "$repo" add -A
commit -m "Start mathlib with identity(x)"

change double "double(x)" "Add double(x)" "double(x) returns twice x." <<'EOF'
    """Returns twice x."""
    return 2 * x
--
    """Returns twice x."""
    return x + 2
--
import unittest

from mathlib import double


class DoubleTest(unittest.TestCase):
    def test_doubles(self):
        self.assertEqual(double(3), 6)
        self.assertEqual(double(-4), -8)
EOF

change square "square(x)" "Add square(x)" "square(x) returns x times x." <<'EOF'
    """Returns x times x."""
    return x * x
--
    """Returns x times x."""
    return x * 2
--
import unittest

from mathlib import square


class SquareTest(unittest.TestCase):
    def test_squares(self):
        self.assertEqual(square(5), 25)
        self.assertEqual(square(-3), 9)
EOF

change clamp "clamp(x, low, high)" "Add clamp(x, low, high)" \
	"clamp(x, low, high) returns x held within [low, high]: low when x is below it, high when x is above it." <<'EOF'
    """Returns x held within [low, high]."""
    return min(max(x, low), high)
--
    """Returns x held within [low, high]."""
    return max(x, low)
--
import unittest

from mathlib import clamp


class ClampTest(unittest.TestCase):
    def test_holds_within_bounds(self):
        self.assertEqual(clamp(5, 0, 10), 5)
        self.assertEqual(clamp(-5, 0, 10), 0)
        self.assertEqual(clamp(50, 0, 10), 10)
EOF

printf '\nEvery function has a test under tests/.\n' >>"$repo/README.md"
git -C "$repo" add README.md
commit -m "Say in the README where the tests are"

change mean "mean(values)" "Add mean(values)" \
	"mean(values) returns the arithmetic mean of a non-empty list of numbers, as a float." <<'EOF'
    """Returns the arithmetic mean of a non-empty list of numbers."""
    return sum(values) / len(values)
--
    """Returns the arithmetic mean of a non-empty list of numbers."""
    return sum(values) // len(values)
--
import unittest

from mathlib import mean


class MeanTest(unittest.TestCase):
    def test_means(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)
        self.assertEqual(mean([7]), 7)
EOF

change is_palindrome "is_palindrome(text)" "Add is_palindrome(text)" \
	"is_palindrome(text) tells whether text reads the same backwards, ignoring case, spaces and punctuation." <<'EOF'
    """Whether text reads the same backwards, ignoring case, spaces and punctuation."""
    letters = [c.lower() for c in text if c.isalnum()]
    return letters == letters[::-1]
--
    """Whether text reads the same backwards, ignoring case, spaces and punctuation."""
    return text == text[::-1]
--
import unittest

from mathlib import is_palindrome


class PalindromeTest(unittest.TestCase):
    def test_ignores_case_and_punctuation(self):
        self.assertTrue(is_palindrome("A man, a plan, a canal: Panama"))
        self.assertFalse(is_palindrome("mathlib"))
EOF

change factorial "factorial(n)" "Add factorial(n)" \
	"factorial(n) returns n! for n >= 0 (factorial(0) is 1)." <<'EOF'
    """Returns n! for n >= 0."""
    result = 1
    for i in range(2, n + 1):
        result *= i
    return result
--
    """Returns n! for n >= 0."""
    result = 1
    for i in range(2, n):
        result *= i
    return result
--
import unittest

from mathlib import factorial


class FactorialTest(unittest.TestCase):
    def test_factorials(self):
        self.assertEqual(factorial(0), 1)
        self.assertEqual(factorial(5), 120)
EOF

cat >"$shared/agent.sh" <<EOF
#!/bin/sh
# The example's agent (scripts/eval-example.sh). \$1: reproduce or wrong.
set -eu
shared=$shared
if [ "\$OPENTIGER_ROLE" = judge ]; then
	echo "judge \$OPENTIGER_TASK_ID" >>"\$shared/calls.log"
	echo '{"verdict": "approve", "summary": "looks fine"}' >"\$OPENTIGER_RESULT_FILE"
	exit 0
fi
name=\$(grep -o 'Add [a-z_]*(' "\$OPENTIGER_PROMPT_FILE" | head -n 1 | sed 's/^Add //; s/(\$//')
echo "worker \$name" >>"\$shared/calls.log"
if [ -z "\$name" ] || [ ! -f "\$shared/\$1/\$name.py" ]; then
	echo "the task names no function this agent knows" >&2
	exit 1
fi
printf '\n\n' >>mathlib.py
cat "\$shared/\$1/\$name.py" >>mathlib.py
echo "{\"summary\": \"added \$name\"}" >"\$OPENTIGER_RESULT_FILE"
EOF
chmod +x "$shared/agent.sh"

for variant in reproduce wrong; do
	cat >"$dir/$variant.yml" <<EOF
# The example's configuration with the agent that writes the $variant version.
mode: local-git
agents:
  default:
    executor: command
    command: ["$shared/agent.sh", "$variant"]
    timeout_minutes: 2
verify:
  commands: ["python3 -m unittest discover -s tests -t ."]
sandbox:
  # The agent reads its versions of the functions here and notes each call.
  writable: ["$shared"]
EOF
done
echo "$repo"
