//! reduce-atomic's operators: the family's operator suite (`reduction::operator_suite`: every
//! built-in operator of every type against the CPU at edge sizes and offsets, the semantics page's
//! special values, identities of empty inputs, property tests) for the one-launch
//! [`reduce_atomic::operators::Reduce`].

use gpu_test::TestSuite;
use reduce_atomic::operators::OneLaunchOperators;
use reduction::operator_suite::OperatorSuites;

fn main() -> std::process::ExitCode {
    TestSuite::new().operator_suite::<OneLaunchOperators>("operators").run()
}
