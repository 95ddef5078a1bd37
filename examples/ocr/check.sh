#!/usr/bin/env bash
# Checks the OCR example's outputs against the text the pages were rendered from:
#
#   examples/ocr/check.sh TRUTHDIR OCRDIR [MIN_PERCENT]
#
# For every TRUTHDIR/page-NN.txt (written by make-pages.sh) it reads OCRDIR/page-NN.txt (a
# task's output) and aligns the two as sequences of words: the words of the source found in the
# OCR text in the same order (their longest common subsequence) are correct, the other source
# words are missed, and OCR words matched to nothing are extra. Words are compared exactly,
# case included, after removing everything but A-Z a-z 0-9 from each (groff sets ' as a curly
# quote, which the OCR rightly reads back as one; punctuation is not what is measured).
# Prints one line per page and a total; exits 1 when a page's output is missing, or when, over
# all pages, fewer than MIN_PERCENT (default 95) percent of the source words are correct or
# extra words come to more than 100-MIN_PERCENT percent of them.
set -euo pipefail
die() { echo "check: $*" >&2; exit 2; }
if [ $# -lt 2 ] || [ $# -gt 3 ]; then die "usage: $0 TRUTHDIR OCRDIR [MIN_PERCENT]"; fi
TRUTH=$1 OCR=$2 MIN=${3:-95}
[ -d "$TRUTH" ] || die "no directory '$TRUTH'"
[ -d "$OCR" ] || die "no directory '$OCR'"
[[ $MIN =~ ^[0-9]+([.][0-9]+)?$ ]] || die "MIN_PERCENT '$MIN' is not a number"
shopt -s nullglob
pages=("$TRUTH"/page-*.txt)
[ ${#pages[@]} -gt 0 ] || die "no page-*.txt in '$TRUTH'"

# align TRUTH OCR: prints "WORDS CORRECT EXTRA" for one page (LCS of the normalized word
# sequences, by dynamic programming over two rows).
align() {
  LC_ALL=C awk '
    FNR == 1 { f++ }
    {
      for (i = 1; i <= NF; i++) {
        w = $i; gsub(/[^A-Za-z0-9]/, "", w)
        if (w == "") continue
        if (f == 1) T[++nt] = w; else O[++no] = w
      }
    }
    END {
      for (j = 0; j <= no; j++) prev[j] = 0
      for (i = 1; i <= nt; i++) {
        cur[0] = 0
        for (j = 1; j <= no; j++) {
          if (T[i] == O[j]) cur[j] = prev[j - 1] + 1
          else cur[j] = (prev[j] >= cur[j - 1]) ? prev[j] : cur[j - 1]
        }
        for (j = 0; j <= no; j++) prev[j] = cur[j]
      }
      print nt + 0, prev[no] + 0, no - prev[no]
    }
  ' "$1" "$2"
}

missing=0
results=""
for t in "${pages[@]}"; do
  page=$(basename "$t" .txt)
  o=$OCR/$page.txt
  if [ ! -f "$o" ]; then
    echo "$page: no OCR output ($o)"
    missing=$((missing + 1))
    continue
  fi
  read -r words correct extra < <(align "$t" "$o")
  awk -v p="$page" -v w="$words" -v c="$correct" -v x="$extra" 'BEGIN {
    printf "%s: %4d words, %4d correct, %3d missed, %3d extra  %6.2f%%\n",
      p, w, c, w - c, x, w ? 100 * c / w : 100 }'
  results+="$words $correct $extra"$'\n'
done

printf '%s' "$results" | awk -v min="$MIN" -v missing="$missing" -v pages=${#pages[@]} '
  { W += $1; C += $2; X += $3 }
  END {
    acc = W ? 100 * C / W : 0; ext = W ? 100 * X / W : 0
    printf "total: %d pages, %d words, %d correct, %d missed, %d extra: accuracy %.2f%%\n",
      pages, W, C, W - C, X, acc
    bad = 0
    if (missing > 0) {
      printf "check: FAILED: %d of %d pages have no OCR output\n", missing, pages; bad = 1
    }
    if (acc < min) { printf "check: FAILED: accuracy %.2f%% is under %s%%\n", acc, min; bad = 1 }
    if (ext > 100 - min) {
      printf "check: FAILED: extra words come to %.2f%% of the source words, over %s%%\n",
        ext, 100 - min
      bad = 1
    }
    if (!bad) printf "check: OK (at least %s%% of the words correct)\n", min
    exit bad
  }'
