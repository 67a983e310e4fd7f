//! The PTX front end and interpreter.
