//! The ISBN's barcode on the back of the print cover: the EAN-13 symbol an ISBN-13 is (the
//! "Bookland" prefixes 978 and 979), with the price's five-digit add-on (EAN-5) when the book
//! gives one (`crate::paperback::Price`), drawn as Typst rectangles in pure black on a white
//! box that holds the standard's quiet zones. `barcoders` encodes the EAN-13; the add-on is
//! encoded here, because barcoders 2.0's EAN-5 sets the parity of a price whose check value is
//! 0 (61995, say) as LLGGG where the standard has GGLLL, which no scanner reads.
//!
//! Sizes are GS1's for EAN-13 (General Specifications, 5.2.3.4): a module of 0.33 mm at 100 %
//! magnification, 95 modules, bars 22.85 mm high with the guard bars 5 modules longer, quiet
//! zones of 11 modules on the left and 7 on the right; an add-on stands 9 modules to the right
//! (GS1: 7 to 12), 47 modules wide, with a quiet zone of 5 after it and its digits above it. The symbol is printed at 85 %, inside
//! GS1's 80–200 %, so that it and its quiet zones fit the 2 × 1.2 in barcode area the printers
//! leave on a back cover.

use std::fmt::Write as _;

use barcoders::sym::ean13::EAN13;

use super::strings::literal;

/// The symbol's magnification: 85 % of nominal.
const MAGNIFICATION: f64 = 0.85;
/// One module's width, in millimetres.
const MODULE_MM: f64 = 0.33 * MAGNIFICATION;
const LEFT_QUIET_MODULES: f64 = 11.0;
const RIGHT_QUIET_MODULES: f64 = 7.0;
const SYMBOL_MODULES: usize = 95;
const ADD_ON_GAP_MODULES: f64 = 9.0;
const ADD_ON_MODULES: f64 = 47.0;
const ADD_ON_QUIET_MODULES: f64 = 5.0;
/// The add-on's digits stand above its bars, which are shorter by as much.
const ADD_ON_DIGITS_MM: f64 = 3.2;
/// The bars' height, and how far the guard bars reach below them.
const BAR_MM: f64 = 22.85 * MAGNIFICATION;
const GUARD_EXTRA_MM: f64 = 5.0 * MODULE_MM;
/// The human-readable line: the digits under the bars, and the ISBN above them.
const DIGITS_PT: f64 = 8.5;
const ISBN_LINE_MM: f64 = 3.6;
/// The digits begin this far under the bars, and end this far under the guard bars' feet.
const DIGITS_GAP_MM: f64 = 0.3;
const DIGITS_BELOW_GUARDS_MM: f64 = 2.6;
/// White around it all, beyond the quiet zones.
const MARGIN_MM: f64 = 1.0;

/// The ISBN as an EAN-13 barcode.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Barcode {
    /// The 13 digits.
    digits: String,
    /// The symbol's modules, dark (1) or light (0), left to right.
    modules: Vec<u8>,
    /// The add-on's five digits and modules.
    add_on: Option<(String, Vec<u8>)>,
}

impl Barcode {
    /// The barcode for `isbn`, an ISBN-13 or an ISBN-10 (which becomes 978 and its first nine
    /// digits, with a check digit of its own), as `ebook::metadata::parse_isbn` gives them, with
    /// `add_on`'s five digits beside it if there are any.
    pub(crate) fn of_isbn(isbn: &str, add_on: Option<&str>) -> Option<Barcode> {
        let body: String = match isbn.len() {
            13 => isbn[..12].to_owned(),
            10 => format!("978{}", &isbn[..9]),
            _ => return None,
        };
        let symbol = EAN13::new(&body).ok()?;
        let check = crate::ebook::metadata::isbn_check_digit(&body.chars().collect::<Vec<_>>())?;
        let digits = format!("{body}{check}");
        // Only an ISBN already checked gets here; one whose check digit differs is a bug.
        let add_on = match add_on {
            Some(code) => Some((code.to_owned(), add_on_modules(code)?)),
            None => None,
        };
        (isbn.len() == 10 || digits == isbn).then(|| Barcode {
            digits,
            modules: symbol.encode(),
            add_on,
        })
    }

    /// The box's size, in millimetres.
    pub(crate) fn size_mm(&self) -> (f64, f64) {
        let right = match self.add_on {
            Some(_) => ADD_ON_GAP_MODULES + ADD_ON_MODULES + ADD_ON_QUIET_MODULES,
            None => RIGHT_QUIET_MODULES,
        };
        let width =
            (LEFT_QUIET_MODULES + SYMBOL_MODULES as f64 + right) * MODULE_MM + 2.0 * MARGIN_MM;
        let height =
            MARGIN_MM + ISBN_LINE_MM + BAR_MM + GUARD_EXTRA_MM + DIGITS_BELOW_GUARDS_MM + MARGIN_MM;
        (width, height)
    }

    /// Typst for the white box with the symbol, its digits below and `ISBN …` above, to be
    /// placed with its top left corner where the caller puts it.
    pub(crate) fn typst(&self) -> String {
        let (width, height) = self.size_mm();
        let x0 = MARGIN_MM + LEFT_QUIET_MODULES * MODULE_MM;
        let top = MARGIN_MM + ISBN_LINE_MM;
        let d = &self.digits;
        let mut out = String::new();
        label(
            &mut out,
            (MARGIN_MM, MARGIN_MM),
            width - 2.0 * MARGIN_MM,
            0.0,
            &format!("ISBN {d}"),
        );
        // The guards (the first three, the middle five and the last three modules) reach below
        // the others into the digits' line.
        draw(&mut out, &self.modules, x0, |start| {
            let guard = start < 3 || (45..50).contains(&start) || start >= 92;
            (top, BAR_MM + if guard { GUARD_EXTRA_MM } else { 0.0 })
        });
        // The digits: the first in the left quiet zone, then two groups of six under the halves.
        let below = top + BAR_MM + DIGITS_GAP_MM;
        let first_width = LEFT_QUIET_MODULES * MODULE_MM - 0.4;
        label(&mut out, (MARGIN_MM, below), first_width, 0.0, &d[..1]);
        for (digits, module) in [(&d[1..7], 3.0), (&d[7..13], 50.0)] {
            let x = x0 + module * MODULE_MM;
            label(&mut out, (x, below), 42.0 * MODULE_MM, 0.12, digits);
        }
        if let Some((code, modules)) = &self.add_on {
            let x = x0 + (SYMBOL_MODULES as f64 + ADD_ON_GAP_MODULES) * MODULE_MM;
            draw(&mut out, modules, x, |_| {
                (
                    top + ADD_ON_DIGITS_MM,
                    BAR_MM + GUARD_EXTRA_MM - ADD_ON_DIGITS_MM,
                )
            });
            label(
                &mut out,
                (x, top - 0.2),
                ADD_ON_MODULES * MODULE_MM,
                0.12,
                code,
            );
        }
        format!(
            "box(width: {width:.4}mm, height: {height:.4}mm, fill: white, {{\nset text(fill: black, hyphenate: false)\n{out}}})"
        )
    }
}

/// A line of the human-readable text, centred in a box `width` wide at `at` (in millimetres),
/// its letters spaced by `tracking` ems.
fn label(out: &mut String, at: (f64, f64), width: f64, tracking: f64, text: &str) {
    let _ = writeln!(
        out,
        "place(top + left, dx: {:.4}mm, dy: {:.4}mm, box(width: {width:.4}mm, align(center, text(size: {DIGITS_PT}pt, tracking: {tracking}em, {}))))",
        at.0,
        at.1,
        literal(text),
    );
}

/// The left-hand digits' patterns of EAN (GS1 General Specifications, 5.2.1.2.1): set A (odd
/// parity) and set B (even parity), by digit.
const SET_A: [&str; 10] = [
    "0001101", "0011001", "0010011", "0111101", "0100011", "0110001", "0101111", "0111011",
    "0110111", "0001011",
];
const SET_B: [&str; 10] = [
    "0100111", "0110011", "0011011", "0100001", "0011101", "0111001", "0000101", "0010001",
    "0001001", "0010111",
];
/// Which set each of the add-on's five digits is drawn from, by its check value (GS1 5.2.2.6.2):
/// B where the string has `B`.
const ADD_ON_PARITY: [&str; 10] = [
    "BBAAA", "BABAA", "BAABA", "BAAAB", "ABBAA", "AABBA", "AAABB", "ABABA", "ABAAB", "AABAB",
];

/// The five-digit add-on's modules: its start (1011), then each digit, with 01 between them.
fn add_on_modules(code: &str) -> Option<Vec<u8>> {
    let digits: Vec<usize> = code
        .chars()
        .map(|c| c.to_digit(10).map(|d| d as usize))
        .collect::<Option<_>>()?;
    if digits.len() != 5 {
        return None;
    }
    // The check value: the odd positions' digits times 3 and the even ones' times 9, modulo 10.
    let check = digits
        .iter()
        .enumerate()
        .map(|(i, d)| if i % 2 == 0 { d * 3 } else { d * 9 })
        .sum::<usize>()
        % 10;
    let mut modules = String::from("1011");
    for (i, (digit, set)) in digits.iter().zip(ADD_ON_PARITY[check].chars()).enumerate() {
        if i > 0 {
            modules.push_str("01");
        }
        modules.push_str(if set == 'B' {
            SET_B[*digit]
        } else {
            SET_A[*digit]
        });
    }
    Some(modules.bytes().map(|b| b - b'0').collect())
}

/// One rectangle for each run of dark modules, from `x` (in millimetres), with the top and
/// height `extent` gives for the module the run starts at.
fn draw(out: &mut String, modules: &[u8], x: f64, extent: impl Fn(usize) -> (f64, f64)) {
    let mut m = 0;
    while m < modules.len() {
        if modules[m] == 0 {
            m += 1;
            continue;
        }
        let start = m;
        while m < modules.len() && modules[m] == 1 {
            m += 1;
        }
        let (top, height) = extent(start);
        let _ = writeln!(
            out,
            "place(top + left, dx: {:.4}mm, dy: {top:.4}mm, rect(width: {:.4}mm, height: {height:.4}mm, fill: black, stroke: none))",
            x + start as f64 * MODULE_MM,
            (m - start) as f64 * MODULE_MM,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_isbn_13_is_its_own_ean_and_an_isbn_10_gains_978_and_a_new_check_digit() {
        let thirteen = Barcode::of_isbn("9780306406157", None).expect("barcode");
        assert_eq!(thirteen.digits, "9780306406157");
        assert_eq!(thirteen.modules.len(), SYMBOL_MODULES);
        // The guards: 101 at each end, 01010 in the middle.
        assert_eq!(&thirteen.modules[..3], &[1, 0, 1]);
        assert_eq!(&thirteen.modules[45..50], &[0, 1, 0, 1, 0]);
        assert_eq!(&thirteen.modules[92..], &[1, 0, 1]);
        let ten = Barcode::of_isbn("0306406152", None).expect("barcode");
        assert_eq!(ten, thirteen);
        assert_eq!(
            Barcode::of_isbn("080442957X", None).expect("X").digits,
            "9780804429573"
        );
        assert_eq!(Barcode::of_isbn("9780306406158", None), None);
    }

    #[test]
    fn the_box_fits_the_printers_barcode_area_with_or_without_a_price() {
        let plain = Barcode::of_isbn("9780306406157", None).expect("barcode");
        let priced = Barcode::of_isbn("9780306406157", Some("51499")).expect("barcode");
        for barcode in [&plain, &priced] {
            let (w, h) = barcode.size_mm();
            assert!(w <= 2.0 * 25.4 && h <= 1.2 * 25.4, "{w:.1} × {h:.1} mm");
        }
        // The quiet zones are inside it, at this magnification.
        assert!(plain.size_mm().0 >= (11.0 + 95.0 + 7.0) * 0.33 * 0.8);
        assert!(priced.size_mm().0 >= (11.0 + 95.0 + 9.0 + 47.0 + 5.0) * 0.33 * 0.8);
        let (_, modules) = priced.add_on.as_ref().expect("add-on");
        assert_eq!(modules.len(), 47);
    }

    /// The add-on of 51499 as GS1 draws it (check value 5·3 + 1·9 + 4·3 + 9·9 + 9·3 = 144, so
    /// 4: ABBAA), and 61995's, whose check value is 0, the one barcoders 2.0 gets wrong.
    #[test]
    fn the_add_on_takes_the_parity_its_check_value_asks() {
        let modules: String = add_on_modules("51499")
            .expect("add-on")
            .iter()
            .map(|m| char::from(b'0' + m))
            .collect();
        assert_eq!(
            modules,
            [
                "1011", "0110001", "01", "0110011", "01", "0011101", "01", "0001011", "01",
                "0001011"
            ]
            .concat()
        );
        let first_two: String = add_on_modules("61995")
            .expect("add-on")
            .iter()
            .take(4 + 7 + 2 + 7)
            .map(|m| char::from(b'0' + m))
            .collect();
        // 6 and 1 from set B, as BBAAA says.
        assert_eq!(first_two, ["1011", "0000101", "01", "0110011"].concat());
        assert_eq!(add_on_modules("5149"), None);
        assert_eq!(add_on_modules("5149x"), None);
    }
}
