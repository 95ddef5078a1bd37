#!/usr/bin/env bash
# Renders a real text shipped by Debian into page images for the OCR example, deterministically:
#
#   examples/ocr/make-pages.sh OUTDIR
#
# The text is the GNU GPL version 3 (/usr/share/common-licenses/GPL-3, from base-files): its
# lines are cut into pages of LINES_PER_PAGE lines (default 34: its 674 lines make 20 pages), set
# line for line (no filling, no hyphenation) in 11-point Times with groff, and rasterised to
# 8-bit grey PNG at DPI dots per inch (default 200) with ghostscript. Writes:
#   OUTDIR/pages/page-NN.png  one image per page (the tasks' input)
#   OUTDIR/truth/page-NN.txt  the source lines on that page (what check.sh compares against)
#   OUTDIR/pages.txt          the page names, one a line (the job's items_file)
# PAGES=N keeps only the first N pages. Needs groff-base and ghostscript (scripts/bootstrap.sh).
set -euo pipefail
die() { echo "make-pages: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: $0 OUTDIR"
OUT=$1
SRC=${SRC:-/usr/share/common-licenses/GPL-3}
LINES_PER_PAGE=${LINES_PER_PAGE:-34}
DPI=${DPI:-200}
PAGES=${PAGES:-0}  # 0: all
for v in LINES_PER_PAGE DPI PAGES; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number, got '${!v}'"
done
[ "$LINES_PER_PAGE" -gt 0 ] && [ "$DPI" -gt 0 ] || die "LINES_PER_PAGE and DPI must be positive"
for tool in groff gs; do
  command -v "$tool" >/dev/null || die "'$tool' not found (run scripts/bootstrap.sh)"
done
[ -r "$SRC" ] || die "cannot read the source text '$SRC'"

rm -rf "$OUT/pages" "$OUT/truth" "$OUT/pages.txt" "$OUT/pages.ps"
mkdir -p "$OUT/pages" "$OUT/truth"

# The truth, page by page, and the troff source: every source line is output as it is (\& keeps
# a leading '.' or "'" from being read as a request, \e is a literal backslash), a new page
# every LINES_PER_PAGE lines.
LC_ALL=C awk -v per="$LINES_PER_PAGE" -v max="$PAGES" -v truth="$OUT/truth" '
  BEGIN {
    print ".pl 11i"; print ".ll 6.5i"; print ".po 1i"
    print ".nf"; print ".ft R"; print ".ps 11"; print ".vs 14p"
  }
  {
    sub(/\r$/, "")
    n = int((NR - 1) / per) + 1
    if (max > 0 && n > max) exit
    if ((NR - 1) % per == 0) {
      if (n > 1) { close(f); print ".bp" }
      f = sprintf("%s/page-%02d.txt", truth, n)
      printf "" > f
      print ".sp |1i"
    }
    print $0 >> f
    line = $0
    gsub(/\\/, "\\e", line)
    print "\\&" line
  }
' "$SRC" > "$OUT/pages.tr"

# SOURCE_DATE_EPOCH pins the date groff writes into the PostScript (the images never show it).
SOURCE_DATE_EPOCH=0 groff -Tps -P-pletter "$OUT/pages.tr" > "$OUT/pages.ps"
gs -q -dSAFER -dBATCH -dNOPAUSE -sDEVICE=pnggray -r"$DPI" -dTextAlphaBits=4 \
  -o "$OUT/pages/page-%02d.png" "$OUT/pages.ps"
rm -f "$OUT/pages.tr" "$OUT/pages.ps"

n_truth=$(find "$OUT/truth" -name 'page-*.txt' | wc -l)
n_png=$(find "$OUT/pages" -name 'page-*.png' | wc -l)
if [ "$n_truth" != "$n_png" ] || [ "$n_png" = 0 ]; then
  die "$n_png page images but $n_truth pages of text (groff broke a page where it should not)"
fi
for f in "$OUT"/pages/page-*.png; do basename "$f" .png; done >"$OUT/pages.txt"
echo "make-pages: $n_png pages of $(basename "$SRC") at $DPI dpi in $OUT/pages" \
  "($(du -cb "$OUT"/pages/*.png | tail -1 | cut -f1) bytes)"
