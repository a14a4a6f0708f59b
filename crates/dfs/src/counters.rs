//! [`counters!`]: a struct of `u64` counters that sum field-wise, so the counters of several
//! nodes or replicas add up without each struct listing its fields a second time.

/// Declares a struct of `pub` `u64` counter fields (attributes and docs as written) and its
/// field-wise [`std::ops::AddAssign`].
macro_rules! counters {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident: u64, )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* pub $field: u64, )*
        }

        impl std::ops::AddAssign for $name {
            /// Field-wise sum (counters of several nodes or replicas).
            fn add_assign(&mut self, o: $name) {
                $( self.$field += o.$field; )*
            }
        }
    };
}
