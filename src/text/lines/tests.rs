use super::*;

/// Pieces of a line joined give the line's bytes, however it is cut,
/// invalid UTF-8 included (each invalid sequence one character).
#[test]
fn pieces_of_a_line_join_to_its_bytes() {
    let line: &[u8] = b"ab\xc3\xa9\xffcd\xe2\x82\n";
    // a b é � c d � \n: 8 characters.
    for take in 1..10 {
        let mut at = 0;
        let mut got = Vec::new();
        loop {
            let p = piece(&line[at..], 0, take, true);
            got.extend_from_slice(&line[at + p.start..at + p.end]);
            at += p.end;
            if p.ends_line {
                break;
            }
        }
        assert_eq!(got, line, "take {take}");
    }
    let p = piece(line, 3, 2, true);
    assert_eq!((p.start, p.end, p.chars, p.ends_line), (4, 6, 2, false));
    let p = piece(line, 6, 5, true);
    assert_eq!((p.start, p.end, p.chars, p.ends_line), (7, 10, 2, true));
    // The line ended within what was given.
    assert!(piece(b"ab\ncd", 5, 2, false).ends_line);
    // Bytes that run out mid-line: the line goes on unless at the end.
    assert!(!piece(b"abc", 1, 9, false).ends_line);
    assert!(piece(b"abc", 1, 9, true).ends_line);
}

const NONE: Caps = Caps {
    whole_chars: usize::MAX,
    cut_chars: usize::MAX,
    bytes: usize::MAX,
};

fn run(text: &[u8], first: u64, count: Option<u64>, numbers: bool, caps: Caps) -> (String, End) {
    // Feed in every chunk size, and check they all agree.
    let mut results = Vec::new();
    for size in [1, 2, 3, 7, 64, text.len().max(1)] {
        let mut c = Collector::new(
            Range {
                first,
                count,
                numbers,
            },
            caps,
        );
        for chunk in text.chunks(size) {
            if c.is_done() {
                break;
            }
            c.feed(chunk);
        }
        results.push(c.finish());
    }
    for r in &results {
        assert_eq!(r, &results[0], "{text:?} {first} {count:?}");
    }
    results.swap_remove(0)
}

#[test]
fn ranges_are_the_lines_bytes() {
    let t = b"one\ntwo\r\nthree\nfour";
    assert_eq!(
        run(t, 1, None, false, NONE),
        (String::from_utf8_lossy(t).into(), End::Complete)
    );
    assert_eq!(run(t, 2, Some(2), false, NONE).0, "two\r\nthree\n");
    assert_eq!(run(t, 4, Some(9), false, NONE).0, "four");
    assert_eq!(
        run(t, 5, None, false, NONE),
        (String::new(), End::PastEof { lines: 4 })
    );
    assert_eq!(
        run(b"a\n", 2, None, false, NONE),
        (String::new(), End::PastEof { lines: 1 })
    );
    assert_eq!(
        run(b"", 1, None, false, NONE),
        (String::new(), End::Complete)
    );
    assert_eq!(
        run(b"", 2, None, false, NONE),
        (String::new(), End::PastEof { lines: 0 })
    );
    assert_eq!(run(b"\n\n", 2, None, false, NONE).0, "\n");
}

#[test]
fn numbers_as_cat_n() {
    assert_eq!(
        run(b"a\nb\n", 1, None, true, NONE).0,
        "     1\ta\n     2\tb\n"
    );
    assert_eq!(run(b"a\nb", 2, None, true, NONE).0, "     2\tb");
    assert_eq!(number_prefix(1234567), "1234567\t");
}

#[test]
fn invalid_utf8_is_lossy_per_line_as_whole() {
    let t = b"a\xff\nb\xe2\x82\nc";
    assert_eq!(run(t, 1, None, false, NONE).0, String::from_utf8_lossy(t));
}

#[test]
fn a_cut_keeps_whole_lines_within_the_cut_room() {
    let caps = Caps {
        whole_chars: 12,
        cut_chars: 8,
        bytes: usize::MAX,
    };
    // Fits whole: 12 characters.
    assert_eq!(
        run(b"aaa\nbbb\nccc\n", 1, None, false, caps).1,
        End::Complete
    );
    assert_eq!(
        run(b"aaa\nbbb\nccc\nd\n", 1, None, false, caps),
        (
            "aaa\nbbb\n".into(),
            End::Cut {
                cap: Cap::Chars,
                next: 3
            }
        )
    );
    assert_eq!(
        run(b"aaa\nbbb\nccc\nddd\ne\n", 2, None, false, caps),
        (
            "bbb\nccc\n".into(),
            End::Cut {
                cap: Cap::Chars,
                next: 4
            }
        )
    );
    assert_eq!(
        run(b"0123456789abcdef\nx\n", 1, None, false, caps),
        (
            "01234567".into(),
            End::LongLine {
                cap: Cap::Chars,
                line: 1,
                shown: 8
            }
        )
    );
    // The first line fits whole but not the cut, and the second is
    // over: the first line's start is shown, never the second's.
    assert_eq!(
        run(b"0123456789\nabc\n", 1, None, false, caps),
        (
            "01234567".into(),
            End::LongLine {
                cap: Cap::Chars,
                line: 1,
                shown: 8
            }
        )
    );
    let bytes = Caps {
        whole_chars: usize::MAX,
        cut_chars: usize::MAX,
        bytes: 5,
    };
    assert_eq!(
        run(b"ab\ncd\nef\n", 1, None, false, bytes),
        (
            "ab\n".into(),
            End::Cut {
                cap: Cap::Bytes,
                next: 2
            }
        )
    );
}

/// The text of a range never passes [`text_most`] of the bytes it came
/// from, for the files that make the most text per byte, and its
/// capacity stays within what [`Collector::hold_at_most`] allows.
#[test]
fn text_most_bounds_the_text_and_its_capacity() {
    let files: [(&str, Vec<u8>); 4] = [
        ("empty lines", b"\n".repeat(20_000)),
        ("invalid bytes", b"\xff".repeat(20_000)),
        ("invalid lines", b"\xff\n".repeat(10_000)),
        ("one byte lines", b"a\n".repeat(10_000)),
    ];
    for (what, file) in files {
        for numbers in [false, true] {
            let range = Range {
                first: 1,
                count: None,
                numbers,
            };
            let most = text_most(range, NONE, file.len() as u64);
            let mut c = Collector::new(range, NONE);
            c.hold_at_most(most);
            for chunk in file.chunks(4096) {
                c.feed(chunk);
                assert!(c.text_bytes() <= most, "{what}, numbers {numbers}");
            }
            let (text, _) = c.finish();
            assert!(text.len() as u64 <= most, "{what}, numbers {numbers}");
            assert!(
                text.capacity() as u64 <= most,
                "{what}, numbers {numbers}: capacity {} past {most}",
                text.capacity()
            );
        }
    }
    // Empty lines numbered: eight bytes per byte (nine past line 999,999).
    let numbered = Range {
        first: 1,
        count: None,
        numbers: true,
    };
    assert_eq!(text_most(numbered, NONE, 1000), 8000);
    assert_eq!(text_most(numbered, NONE, 1 << 20), 9 << 20);
    // Never past the text cap.
    let capped = Caps { bytes: 100, ..NONE };
    assert_eq!(text_most(numbered, capped, 1000), 100);
}
