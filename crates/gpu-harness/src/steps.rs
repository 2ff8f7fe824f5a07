//! [`steps!`]: a family's steps written once, each variant beside its name in `course.toml`.

/// Declares a family's step enum: its variants in the chapter's order, each with its doc comment
/// and the step's name in the registry (`course.toml`), tables and charts. It writes the enum and
/// an `impl` with `ALL` (every step, in that order) and `name()`; whatever else a step needs (its
/// kernel, its shape) stays in the crate's own `impl`, where the technique is.
///
/// ```
/// gpu_harness::steps! {
///     /// A step of the ladder.
///     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
///     pub enum Step {
///         /// Step 1: one element per thread.
///         Naive => "naive",
///         /// Step 2: a tile through shared memory.
///         Tiled => "tiled",
///     }
/// }
/// assert_eq!(Step::ALL, [Step::Naive, Step::Tiled]);
/// assert_eq!(Step::Tiled.name(), "tiled");
/// ```
#[macro_export]
macro_rules! steps {
    (
        $(#[$meta:meta])*
        $vis:vis enum $Enum:ident {
            $($(#[$variant_meta:meta])* $Variant:ident => $name:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $Enum {
            $($(#[$variant_meta])* $Variant),+
        }

        impl $Enum {
            /// Every step, in the chapter's order.
            pub const ALL: [$Enum; [$($Enum::$Variant),+].len()] = [$($Enum::$Variant),+];

            /// The step's name in the registry (`course.toml`), tables and charts.
            pub const fn name(self) -> &'static str {
                match self {
                    $($Enum::$Variant => $name),+
                }
            }
        }
    };
}
